#pragma once
// The loader for Python: next() waits in short slices with the GIL released and checks for
// signals between them (Ctrl-C stops it promptly); consumers from several threads are served
// one at a time; close() (and interpreter exit) stop the workers with the GIL released.

#include <pybind11/pybind11.h>

#include "gpufeed/loader.hpp"

namespace gpufeed::python {

namespace py = pybind11;

void bind_loader(py::module_& m);

/// The C++ loader behind a Python `Loader` object (GIL held).
/// @throws py::value_error when it is closed.
[[nodiscard]] loader& native_loader(py::handle object);

}  // namespace gpufeed::python
