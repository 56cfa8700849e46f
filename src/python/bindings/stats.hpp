#pragma once
// The system monitor and the progress line for Python (the loader's statistics and diagnosis
// are bound with the loader: Loader.stats_json(), Loader.diagnose()).

#include <pybind11/pybind11.h>

namespace gpufeed::python {

namespace py = pybind11;

void bind_stats(py::module_& m);

}  // namespace gpufeed::python
