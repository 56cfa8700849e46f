#pragma once
// gpufeed's C++ exceptions as Python ones: logic_error -> ValueError, out_of_memory ->
// MemoryError, sample_error -> gpufeed.SampleError (chained from the dataset's own Python
// exception, traceback included), timeout_error -> gpufeed.LoaderTimeoutError, file_error ->
// gpufeed.FileError (an OSError), worker_error -> gpufeed.WorkerError (a dead worker process's
// with its worker, pid, ending and samples as fields, from which Python makes the message), a
// Python exception from a dataset -> itself.

#include <pybind11/pybind11.h>

namespace gpufeed::python {

void register_exception_translation();

}  // namespace gpufeed::python
