#include "python/bindings/workers.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/tuning/autotuner.hpp"
#include "gpufeed/options.hpp"
#include "python/bindings/batch.hpp"
#include "python/workers/process_dataset.hpp"
#include "python/workers/worker_loop.hpp"

namespace gpufeed::python {

namespace py = pybind11;
using workers::process_dataset;

void bind_workers(py::module_& m) {
  py::class_<process_dataset, dataset, std::shared_ptr<process_dataset>>(
      m, "ProcessDataset", py::dynamic_attr(),
      "A Python dataset read by worker processes (gpufeed/_workers.py starts them).")
      .def(py::init<std::size_t, unsigned, bool, std::size_t, bool>(), py::arg("size"),
           py::arg("workers"), py::arg("collate") = false, py::arg("collate_budget") = 0,
           py::arg("iterable") = false)
      .def(
          "files",
          [](process_dataset const& d, unsigned worker) {
            auto const f = d.files(worker);
            return py::make_tuple(f.control, f.arena, f.to_worker, f.to_main);
          },
          py::arg("worker"),
          "Worker `worker`'s descriptors: control region, arena, its two eventfds.")
      .def_property_readonly("arena_reserve", &process_dataset::arena_reserve)
      .def_property_readonly("workers", &process_dataset::workers)
      .def("attach", &process_dataset::attach, py::arg("worker"), py::arg("pid"))
      .def("stop_workers", &process_dataset::stop_workers)
      .def("release_workers", &process_dataset::release_workers,
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("structure",
                             [](process_dataset const& d) -> py::object {
                               auto s = d.structure();
                               if (s.empty()) return py::none();
                               return py::bytes(s);
                             })
      .def_property_readonly("texts_kept", &process_dataset::texts_kept)
      .def(
          "texts",
          [](process_dataset const& d, batch_lease const& b, std::size_t field) {
            return d.texts(b.value, field);
          },
          py::arg("batch"), py::arg("field"))
      .def(
          "collated",
          [](process_dataset const& d, std::shared_ptr<batch_lease> const& b) {
            auto const slot = b->value.host_field(0);
            auto const batch = d.collated_batch(static_cast<std::byte const*>(slot.data()));
            return export_host_bytes(b, batch.data, batch.bytes);
          },
          py::arg("batch"),
          "The bytes collate_fn's output takes, as a uint8 exporter that keeps the batch leased.");

  m.def(
      "auto_worker_threads", [] { return detail::auto_worker_threads(autotune_options{}); },
      "The workers gpufeed starts when it chooses their number (autotune): the usable cores, "
      "at most 64.");

  m.def(
      "_worker_loop",
      [](py::object const& dataset, py::object const& config, py::object const& init_error) {
        auto const files = config.attr("fds").cast<py::tuple>();
        if (files.size() != 4) {
          throw std::invalid_argument{"_worker_loop: config.fds holds " +
                                      std::to_string(files.size()) + " files, not 4"};
        }
        auto const worker = config.attr("worker").cast<unsigned>();
        workers::worker_setup const setup{worker,
                                          config.attr("workers").cast<unsigned>(),
                                          files[0].cast<int>(),
                                          files[1].cast<int>(),
                                          files[2].cast<int>(),
                                          files[3].cast<int>(),
                                          config.attr("arena_reserve").cast<std::size_t>(),
                                          config.attr("main_pid").cast<int>()};
        // The Python the loop calls lives with the format it serves: a failed read's account
        // in gpufeed._workers, a collate_fn's block layout in gpufeed._collated.
        auto const describe = py::module_::import("gpufeed._workers").attr("describe_read_failure");
        auto const collated = py::module_::import("gpufeed._collated");
        workers::run_worker_loop(
            dataset, setup,
            {.describe = py::cpp_function{[describe, worker](py::object const& exception,
                                                             py::object const& index,
                                                             py::object const& epoch) {
               return describe(worker, exception, index, epoch);
             }},
             .init_error = init_error,
             .collate_fn = config.attr("collate_fn"),
             .iterable = config.attr("iterable").cast<bool>(),
             .drop_last = config.attr("drop_last").cast<bool>(),
             .pack = collated.attr("pack"),
             .write = collated.attr("write")});
      },
      py::arg("dataset"), py::arg("config"), py::arg("init_error") = py::none(),
      "Runs a worker process's loop until the loader stops it or its process is gone "
      "(`config`: gpufeed._workers.WorkerConfig; `init_error`: worker_init_fn's failure, "
      "given to every task).");
}

}  // namespace gpufeed::python
