#include "python/bindings/stats.hpp"

#include <pybind11/stl.h>

#include <memory>

#include "gpufeed/observe/monitor.hpp"
#include "gpufeed/observe/progress.hpp"
#include "python/bindings/loader.hpp"

namespace gpufeed::python {

namespace {
std::chrono::milliseconds to_ms(double seconds) {
  if (!(seconds > 0)) throw py::value_error{"interval: expected seconds > 0"};
  return std::chrono::milliseconds{static_cast<std::int64_t>(seconds * 1000.0 + 0.5)};
}
}  // namespace

void bind_stats(py::module_& m) {
  py::class_<system_monitor>(m, "SystemMonitor",
                             "Samples GPU, VRAM, CPU and RAM on a thread of its own.")
      .def(py::init([](double interval_s, std::size_t history, unsigned gpu_index,
                       double low_utilization_window_s, double low_utilization_percent) {
             monitor_options o;
             o.interval = to_ms(interval_s);
             o.history = history;
             o.gpu_index = gpu_index;
             o.low_utilization_window = to_ms(low_utilization_window_s);
             o.low_utilization_percent = low_utilization_percent;
             py::gil_scoped_release const released;
             return std::make_unique<system_monitor>(std::move(o));
           }),
           py::arg("interval_s") = 1.0, py::arg("history") = 600, py::arg("gpu_index") = 0,
           py::arg("low_utilization_window_s") = 30.0, py::arg("low_utilization_percent") = 30.0)
      .def("latest_json",
           [](system_monitor const& s) -> py::object {
             auto const sample = s.latest();
             if (!sample) return py::none();
             return py::str(to_json(*sample));
           })
      .def_property_readonly("gpu_available", &system_monitor::gpu_available)
      .def("stop", [](system_monitor& s) {
        py::gil_scoped_release const released;
        s.stop();
      });

  py::class_<progress_line>(m, "ProgressLine",
                            "The one-line progress display (redrawn in place on a terminal, "
                            "logged at intervals elsewhere).")
      .def(py::init([](std::optional<bool> tty, double interval_s, double plain_interval_s) {
             progress_options o;
             o.tty = tty;
             o.tty_interval = to_ms(interval_s);
             o.plain_interval = to_ms(plain_interval_s);
             return std::make_unique<progress_line>(std::move(o));
           }),
           py::arg("tty") = py::none(), py::arg("interval_s") = 0.5,
           py::arg("plain_interval_s") = 30.0)
      .def(
          "update",
          [](progress_line& p, py::handle loader, system_monitor const* monitor) {
            return p.update(native_loader(loader), monitor);
          },
          py::arg("loader"), py::arg("monitor") = nullptr)
      .def("end_epoch",
           [](progress_line& p, py::handle loader, std::uint64_t epoch) {
             return p.end_epoch(native_loader(loader).snapshot(), epoch);
           })
      .def_property_readonly("tty", &progress_line::tty)
      .def_property_readonly("last_line", &progress_line::last_line);
}

}  // namespace gpufeed::python
