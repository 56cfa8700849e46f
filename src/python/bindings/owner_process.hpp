#pragma once
// Objects a process inherits when it forks (a worker process started with fork) belong to its
// parent: the threads they would join and the locks they would take are the parent's, and the
// child has none of its threads. Such an object, dropped in the child (by Python's garbage
// collector there), is left alone instead of torn down.

#include <unistd.h>

namespace gpufeed::python {

/// The process an object was made in.
struct owner_process {
  pid_t pid = ::getpid();
  /// Whether the caller runs in that process (not in a child forked from it).
  [[nodiscard]] bool here() const noexcept { return ::getpid() == pid; }
};

}  // namespace gpufeed::python
