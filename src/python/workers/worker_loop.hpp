#pragma once
// The loop a worker process runs: it waits in its mailbox for the loader's tasks, reads samples
// by calling the dataset's __getitem__, and writes each sample's arrays straight into its slot in
// the shared arena; text leaves and failures go back in the reply. It returns when the loader
// asks it to stop or the loader's process is gone.

#include <pybind11/pybind11.h>

#include <cstddef>

namespace gpufeed::python::workers {

namespace py = pybind11;

/// What a worker process is given (its side of process_dataset::worker_files).
struct worker_setup {
  unsigned worker = 0;
  unsigned workers = 1;
  int control_fd = -1;  ///< taken over (closed when the loop returns)
  int arena_fd = -1;    ///< taken over
  int to_worker_fd = -1;
  int to_main_fd = -1;
  std::size_t arena_reserve = 0;
  int main_pid = -1;
};

/// Runs the loop (GIL held; released while waiting). `describe(exception, index, epoch)` returns
/// (text, pickled) for an exception the dataset raised; `init_error`, when not None, is such a
/// pair from worker_init_fn: every task is then answered with it (the loader stops, raising it).
void run_worker_loop(py::object const& dataset, worker_setup const& setup,
                     py::object const& describe, py::object const& init_error);

}  // namespace gpufeed::python::workers
