#pragma once
// loader_options from Python keyword arguments, named as the C++ fields are. Each value is
// checked for its type here (a ValueError naming the option); its range is checked by
// gpufeed::validate, as for C++ callers.

#include <pybind11/pybind11.h>

#include "gpufeed/options.hpp"

namespace gpufeed::python {

namespace py = pybind11;

/// @throws py::value_error naming an unknown option or a value of the wrong type.
[[nodiscard]] loader_options options_from(py::dict const& kwargs);

}  // namespace gpufeed::python
