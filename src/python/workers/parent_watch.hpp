#pragma once
// A worker process's watch on the loader's process: when that process is gone (ended, crashed,
// or killed with SIGKILL, which runs no cleanup of its own), the worker ends at once, even in
// the middle of a dataset's __getitem__, which the worker loop notices only between tasks. No
// orphan keeps reading for a loader that no longer exists.

#include <thread>

#include "python/workers/shared_memory.hpp"

namespace gpufeed::python::workers {

class parent_watch {
 public:
  /// Starts watching process `main_pid` (a pidfd where the kernel has them, else a check each
  /// second). @throws std::system_error when the watch cannot be set up.
  explicit parent_watch(int main_pid);
  /// Stops watching; never throws.
  ~parent_watch();
  parent_watch(parent_watch const&) = delete;
  parent_watch& operator=(parent_watch const&) = delete;

 private:
  int main_pid_;
  file_descriptor stop_;  // an eventfd: signalled by the destructor
  file_descriptor pidfd_;
  std::thread thread_;
};

}  // namespace gpufeed::python::workers
