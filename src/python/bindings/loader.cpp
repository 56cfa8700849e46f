#include "python/bindings/loader.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "gpufeed/diagnosis.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/stats_json.hpp"
#include "python/bindings/batch.hpp"
#include "python/bindings/interpreter_exit.hpp"
#include "python/bindings/options.hpp"
#include "python/bindings/owner_process.hpp"
#include "python/bindings/python_terms.hpp"
#include "python/threads/gil_diagnosis.hpp"
#include "python/threads/python_dataset.hpp"
#include "python/workers/process_dataset.hpp"

namespace gpufeed::python {

namespace {

// How long next() blocks with the GIL released before it checks for signals.
constexpr std::chrono::milliseconds signal_check_interval{100};

class py_loader final : public closes_at_exit {
 public:
  py_loader(std::shared_ptr<dataset const> data, py::dict const& kwargs)
      : python_data_{std::dynamic_pointer_cast<python_dataset const>(data)} {
    auto options = options_from(kwargs);
    bool const options_workers_were_auto = options.workers == auto_workers;
    if (python_data_ && !options_workers_were_auto) {  // before the first read
      const_cast<python_dataset*>(python_data_.get())->set_workers(options.workers);
    }
    {
      py::gil_scoped_release const released;  // the constructor starts threads that may read
      loader_.emplace(std::move(data), std::move(options));
    }
    if (python_data_ && options_workers_were_auto) {  // resolved by the loader
      const_cast<python_dataset*>(python_data_.get())->set_workers(loader_->options().workers);
    }
  }

  /// Makes a loader that interpreter exit will close.
  static std::shared_ptr<py_loader> open(std::shared_ptr<dataset const> data,
                                         py::dict const& kwargs) {
    auto made = std::make_shared<py_loader>(std::move(data), kwargs);
    close_at_exit(made);
    return made;
  }

  ~py_loader() override { close(); }

  py_loader(py_loader const&) = delete;
  py_loader& operator=(py_loader const&) = delete;

  py::object next(std::optional<std::uintptr_t> stream) {
    for (;;) {
      next_result result;
      {
        py::gil_scoped_release const released;
        {
          std::lock_guard const lock{consumer_};
          if (!must_park()) {
            auto& l = open_loader();
            result = stream ? l.try_next_for(signal_check_interval, stream_of(*stream))
                            : l.try_next_for(signal_check_interval);
          }
        }
        if (must_park()) park_forever();
      }
      switch (result.what) {
        case next_result::status::ready:
          return wrap_batch(std::move(*result.value), stream);
        case next_result::status::end_of_epoch:
          return py::none();
        case next_result::status::pending:
          if (PyErr_CheckSignals() != 0) throw py::error_already_set();
          break;
      }
    }
  }

  void set_epoch(std::uint64_t epoch) {
    py::gil_scoped_release const released;
    std::lock_guard const lock{consumer_};
    open_loader().set_epoch(epoch);
  }

  void set_epoch_order(std::uint64_t epoch, py::buffer const& indices,
                       std::optional<py::buffer> const& batch_sizes) {
    epoch_order order{to_sizes(indices, "indices"), batch_sizes
                                                        ? to_sizes(*batch_sizes, "batch_sizes")
                                                        : std::vector<std::size_t>{}};
    py::gil_scoped_release const released;
    std::lock_guard const lock{consumer_};
    open_loader().set_epoch(epoch, std::move(order));
  }

  void close() override {
    if (!owner_.here()) {
      // A process forked from the loader's: its workers are the parent's threads.
      if (loader_) static_cast<void>(new loader{std::move(*loader_)});
      loader_.reset();
      return;
    }
    py::gil_scoped_release const released;
    std::optional<loader> closing;
    {
      std::lock_guard const lock{consumer_};
      if (!loader_) return;
      closing.emplace(std::move(*loader_));
      loader_.reset();
    }
    if (python_data_ && python_data_->read_on_this_thread()) {
      stop_elsewhere(std::move(*closing));
    }
    // Outside the consumer's lock: what the loader holds (a failed read's Python exception and
    // its traceback's frames) may drop the last reference to a DataLoader, whose __del__ closes
    // this loader again, on this thread.
    closing.reset();  // joins the workers; they may take the GIL meanwhile
  }

  [[nodiscard]] bool closed() const noexcept { return !loader_.has_value(); }

  /// `f(loader)` for what any thread may ask (snapshots, sizes).
  loader& native() { return open_loader(); }

  template <class F>
  auto query(F&& f) {
    return f(open_loader());
  }

  /// `f(loader)` for what moves the consumer: one consumer at a time, GIL released meanwhile.
  template <class F>
  auto as_consumer(F&& f) {
    py::gil_scoped_release const released;
    std::lock_guard const lock{consumer_};
    return f(open_loader());
  }

  [[nodiscard]] py::tuple diagnose(std::optional<double> gpu_percent) {
    auto const s = open_loader().snapshot();
    std::optional<gpu_utilization> gpu;
    if (gpu_percent) gpu = gpu_utilization{*gpu_percent, s.wall_s};
    auto d = gpufeed::diagnose(s, gpu);
    if (python_data_) {
      if (auto gil = gil_diagnosis(s, python_data_->times(), d)) d = std::move(*gil);
    }
    return py::make_tuple(to_string(d.kind), d.sentence);
  }

 private:
  static stream_view stream_of(std::uintptr_t value) {
    return value == 1 ? stream_view::legacy_default()
                      : stream_view{reinterpret_cast<stream_view::native_type>(value)};
  }

  static std::vector<std::size_t> to_sizes(py::buffer const& b, char const* name) {
    auto const info = b.request();
    if (info.ndim != 1 || info.itemsize != 8 ||
        (info.format != "q" && info.format != "l" && info.format != "<q" && info.format != "<l")) {
      throw py::value_error{std::string{name} +
                            ": expected a one-dimensional int64 array, got format '" + info.format +
                            "' with " + std::to_string(info.ndim) + " dimensions"};
    }
    std::vector<std::size_t> out(static_cast<std::size_t>(info.shape[0]));
    auto const* base = static_cast<char const*>(info.ptr);
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::int64_t value = 0;
      std::memcpy(&value, base + static_cast<std::ptrdiff_t>(i) * info.strides[0], sizeof value);
      if (value < 0) {
        throw py::value_error{std::string{name} + "[" + std::to_string(i) + "] is " +
                              std::to_string(value) + "; indices and sizes are never negative"};
      }
      out[i] = static_cast<std::size_t>(value);
    }
    return out;
  }

  loader& open_loader() {
    if (!loader_) throw py::value_error{"the loader is closed"};
    return *loader_;
  }

  owner_process owner_;
  std::shared_ptr<python_dataset const> python_data_;
  std::mutex consumer_;  // one consumer at a time: next(), set_epoch(), restore(), close()
  std::optional<loader> loader_;
};

}  // namespace

loader& native_loader(py::handle object) {
  return object.cast<py_loader&>().native();
}

void bind_loader(py::module_& m) {
  py::class_<py_loader, std::shared_ptr<py_loader>>(
      m, "Loader",
      "The C++ loader; gpufeed.DataLoader is the torch-style way in. Keyword "
      "arguments are loader_options' fields.")
      .def(py::init([](std::shared_ptr<dataset> data, py::kwargs const& kwargs) {
             return py_loader::open(std::move(data), kwargs);
           }),
           py::arg("dataset"))
      .def("next", &py_loader::next, py::arg("stream") = py::none(),
           "The next batch of the epoch, or None at its end. Waits with the GIL released and "
           "stops on KeyboardInterrupt; `stream` (CUDA path) is the consumer stream as DLPack "
           "numbers it (1: the legacy default stream).")
      .def("set_epoch", &py_loader::set_epoch, py::arg("epoch"))
      .def("set_epoch_order", &py_loader::set_epoch_order, py::arg("epoch"), py::arg("indices"),
           py::arg("batch_sizes") = py::none())
      .def("close", &py_loader::close)
      .def_property_readonly("closed", &py_loader::closed)
      .def_property_readonly(
          "epoch", [](py_loader& l) { return l.query([](loader& x) { return x.epoch(); }); })
      .def_property_readonly(
          "batches_per_epoch",
          [](py_loader& l) { return l.query([](loader& x) { return x.batches_per_epoch(); }); })
      .def_property_readonly(
          "steps_per_epoch",
          [](py_loader& l) { return l.query([](loader& x) { return x.steps_per_epoch(); }); })
      .def_property_readonly(
          "samples_per_epoch",
          [](py_loader& l) { return l.query([](loader& x) { return x.samples_per_epoch(); }); })
      .def_property_readonly(
          "batch_bytes",
          // Waits for the layout, which a Python dataset's first read (needing the GIL) gives.
          [](py_loader& l) { return l.as_consumer([](loader& x) { return x.batch_bytes(); }); })
      .def_property_readonly("resolved",
                             [](py_loader& l) {
                               return l.query([](loader& x) {
                                 auto const& o = x.options();
                                 py::dict d;
                                 d["workers"] = o.workers;
                                 d["prefetch_depth"] = o.prefetch_depth;
                                 d["rank"] = o.rank.value_or(0);
                                 d["world_size"] = o.world_size.value_or(1);
                                 d["seed"] = o.seed;
                                 d["cuda"] = o.target == placement::cuda;
                                 d["device"] = o.device.value_or(-1);
                                 return d;
                               });
                             })
      .def(
          "builtin_order",
          [](py_loader& l, std::uint64_t epoch) {
            auto order = l.query([&](loader& x) { return x.builtin_order(epoch); });
            auto const as_array = [](std::vector<std::size_t> const& values) {
              py::array_t<std::int64_t> out(static_cast<py::ssize_t>(values.size()));
              std::copy(values.begin(), values.end(), out.mutable_data());
              return out;
            };
            return py::make_tuple(as_array(order.indices), as_array(order.batch_sizes));
          },
          py::arg("epoch"),
          "(indices, batch sizes) of this rank's share of `epoch` in the builtin order, as "
          "int64 arrays.")
      .def_property_readonly(
          "plan",
          [](py_loader& l) { return l.query([](loader& x) { return in_python_terms(x.plan()); }); },
          "What the loader logs at info once its ring exists, one line each ('' before).")
      .def("state",
           [](py_loader& l) {
             return l.as_consumer([](loader& x) { return x.state().to_string(); });
           })
      .def("restore",
           [](py_loader& l, std::string const& text) {
             l.as_consumer([&](loader& x) {
               x.restore(loader_state::parse(text));
               return 0;
             });
           })
      .def("stats_json",
           [](py_loader& l) { return l.query([](loader& x) { return to_json(x.snapshot()); }); })
      .def("skipped_indices",
           [](py_loader& l) {
             return l.query([](loader& x) { return x.snapshot().skipped_indices; });
           })
      .def("diagnose", &py_loader::diagnose, py::arg("gpu_percent") = py::none())
      .def("write_trace", [](py_loader& l, std::string const& path) {
        l.query([&](loader& x) {
          x.write_trace(std::filesystem::path{path});
          return 0;
        });
      });

  m.def(
      "state_fields",
      [](std::string const& text) {
        auto const state = loader_state::parse(text);
        py::dict d;
        d["seed"] = state.seed;
        d["epoch"] = state.epoch;
        d["next_sequence"] = state.next_sequence;
        d["dataset_size"] = state.dataset_size;
        d["batch_size"] = state.batch_size;
        d["rank"] = state.rank;
        d["world_size"] = state.world_size;
        d["shuffle"] = state.shuffle;
        d["chunk_window"] = state.chunk_window;
        return d;
      },
      py::arg("state"), "The fields of a Loader.state() text, as a dict.");
  m.def(
      "state_text",
      [](py::dict const& d) {
        loader_state state;
        state.seed = d["seed"].cast<std::uint64_t>();
        state.epoch = d["epoch"].cast<std::uint64_t>();
        state.next_sequence = d["next_sequence"].cast<std::uint64_t>();
        state.dataset_size = d["dataset_size"].cast<std::uint64_t>();
        state.batch_size = d["batch_size"].cast<std::uint64_t>();
        state.rank = d["rank"].cast<unsigned>();
        state.world_size = d["world_size"].cast<unsigned>();
        state.shuffle = d["shuffle"].cast<bool>();
        state.chunk_window = d["chunk_window"].cast<std::uint64_t>();
        return state.to_string();
      },
      py::arg("fields"), "The Loader.state() text of state_fields()' dict.");
  m.def("_close_all", &close_all, "Stops every open loader's workers.");
  m.def("_at_exit", &at_exit,
        "Registered with atexit: stops every loader, and parks threads still waiting in next().");
}

}  // namespace gpufeed::python
