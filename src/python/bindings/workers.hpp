#pragma once
// gpufeed._gpufeed's worker-process part: ProcessDataset (the loader's side) and _worker_loop
// (the worker's side); gpufeed/_workers.py starts the processes and joins them.

#include <pybind11/pybind11.h>

namespace gpufeed::python {

void bind_workers(pybind11::module_& m);

}  // namespace gpufeed::python
