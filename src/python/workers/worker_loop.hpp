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

/// What a worker calls in Python (made by the `_worker_loop` binding from the worker's
/// gpufeed._workers.WorkerConfig).
struct worker_calls {
  /// describe(exception, index, epoch) -> (text, pickled): an exception the dataset raised.
  py::object describe;
  /// None, or such a pair from worker_init_fn: every task is then answered with it (the
  /// loader stops, raising it).
  py::object init_error;
  /// None, or the user's collate_fn (collate tasks).
  py::object collate_fn;
  /// Whether the dataset is an iterable one (collate tasks take the batch's samples from this
  /// worker's iterator, made again for each epoch), and whether a short last batch is dropped.
  bool iterable = false;
  bool drop_last = false;
  /// pack(output) -> (bytes, header, arrays) and write(memoryview, header, arrays): a
  /// collate_fn's output laid out in a block (gpufeed._collated, which owns the format).
  py::object pack;
  py::object write;
};

/// Runs the loop (GIL held; released while waiting).
void run_worker_loop(py::object const& dataset, worker_setup const& setup,
                     worker_calls const& calls);

}  // namespace gpufeed::python::workers
