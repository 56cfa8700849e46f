// gpufeed._gpufeed: the compiled part of the Python package. Each part of the C++ library is
// bound in a file of its own (batch, datasets, loader, stats, the worker processes); this file
// makes the module from them and adds the few functions of its own (the log, the shard rule,
// the CUDA devices, the build's parts). The package's Python files (python/gpufeed/) give it
// torch's DataLoader interface.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "gpufeed/build_info.hpp"
#include "gpufeed/log.hpp"
#include "gpufeed/options.hpp"
#include "python/bindings/batch.hpp"
#include "python/bindings/datasets.hpp"
#include "python/bindings/errors.hpp"
#if GPUFEED_WITH_CUDA
#include "gpufeed/cuda/device.hpp"
#endif

#include <spdlog/spdlog.h>
#include "gpufeed/version.hpp"
#include "python/bindings/loader.hpp"
#include "python/bindings/log_terms.hpp"
#include "python/bindings/stats.hpp"
#include "python/bindings/workers.hpp"

PYBIND11_MODULE(_gpufeed, m) {
  namespace py = pybind11;
  namespace gp = gpufeed::python;
  m.doc() = "gpufeed's compiled core; use the gpufeed package.";
  gp::register_exception_translation();
  gp::log_in_python_terms();
  gp::bind_batch(m);
  gp::bind_datasets(m);
  gp::bind_loader(m);
  gp::bind_stats(m);
  gp::bind_workers(m);
  m.attr("__version__") = gpufeed::version;
  m.def(
      "set_log_level", [](std::string const& level) { gpufeed::set_log_level(level); },
      py::arg("level"), "'trace', 'debug', 'info', 'warn', 'error' or 'off'.");
  m.def(
      "log",
      [](std::string const& level, std::string const& message) {
        auto const& l = gpufeed::logger();
        l->log(spdlog::level::from_str(level), message);
      },
      py::arg("level"), py::arg("message"), "Logs through gpufeed's logger (one sink for all).");
  m.def(
      "default_cuda_device",
      [] {
        gpufeed::loader_options cuda;
        cuda.target = gpufeed::placement::cuda;
        cuda.world_size = 1;  // the device alone: whatever the environment says of ranks
        return *gpufeed::resolve_distributed(cuda).device;
      },
      "The device of device='cuda' without a number, as the loader resolves it (LOCAL_RANK, "
      "else 0).");
  m.def(
      "resolve_shard",
      [](std::optional<unsigned> rank, std::optional<unsigned> world_size, bool given) {
        gpufeed::loader_options o;
        o.rank = rank;
        o.world_size = world_size;
        o.order = given ? gpufeed::sample_order::given : gpufeed::sample_order::builtin;
        o = gpufeed::resolve_distributed(o);
        gpufeed::validate(o);
        return py::make_tuple(*o.rank, *o.world_size);
      },
      py::arg("rank"), py::arg("world_size"), py::arg("given"),
      "(rank, world_size) by the core's rule: the values given, then the launcher's environment "
      "(RANK, WORLD_SIZE; LOCAL_RANK with GROUP_RANK or NODE_RANK and LOCAL_WORLD_SIZE). "
      "Raises ValueError for a world of several processes that nothing places in (unless "
      "`given`: a sampler gives the order).");
#if GPUFEED_WITH_CUDA
  m.attr("has_cuda") = true;
  m.def(
      "cuda_devices",
      [] {
        return py::make_tuple(gpufeed::cuda::device_count(), gpufeed::cuda::unavailable_reason());
      },
      "(the CUDA devices this process sees, why none when there are none).");
#else
  m.attr("has_cuda") = false;
  m.def(
      "cuda_devices", [] { return py::make_tuple(0, "gpufeed was built without CUDA (no nvcc)"); },
      "(the CUDA devices this process sees, why none when there are none).");
#endif
  m.def(
      "build_parts",
      [] {
        py::list parts;
        for (auto const& part : gpufeed::build_parts()) {
          parts.append(py::make_tuple(part.name, part.built, part.detail));
        }
        return parts;
      },
      "[(name, built, detail)]: the optional parts of this build, the libraries each runs with "
      "or why it is left out (gpufeed.build_info()).");
  // Stop every loader's workers before the interpreter goes away.
  py::module_::import("atexit").attr("register")(m.attr("_at_exit"));
}
