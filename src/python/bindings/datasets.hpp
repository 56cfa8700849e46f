#pragma once
// The datasets for Python: the bundled ones (they read without the GIL) and the adapter for any
// map-style Python dataset.

#include <pybind11/pybind11.h>

namespace gpufeed::python {

namespace py = pybind11;

void bind_datasets(py::module_& m);

}  // namespace gpufeed::python
