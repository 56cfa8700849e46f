#pragma once
// Taking the GIL from the loader's worker threads, which Python did not create.
//
// Each worker thread gets one Python thread state on its first acquire and keeps it until the
// thread exits, so that threading.local data set by a dataset or a worker_init_fn survives
// from one read to the next (pybind11's gil_scoped_acquire would create and delete a state on
// every read). Threads that exit while the interpreter is finalizing leave their state alone:
// touching Python then would end the thread inside C++ code.

#include <Python.h>

#include <chrono>
#include <cstdint>

namespace gpufeed::python {

/// Whether Python can still be entered (initialized and not finalizing).
[[nodiscard]] bool python_usable() noexcept;

/// Holds the GIL for its scope, from any thread; measures how long taking it waited.
class worker_gil {
 public:
  worker_gil();
  ~worker_gil();
  worker_gil(worker_gil const&) = delete;
  worker_gil& operator=(worker_gil const&) = delete;
  /// Nanoseconds the constructor waited for the GIL.
  [[nodiscard]] std::int64_t waited_ns() const noexcept { return waited_ns_; }

 private:
  PyGILState_STATE state_;
  std::int64_t waited_ns_ = 0;
};

/// Drops one reference to `object` from any thread, taking the GIL if the interpreter is
/// still usable; otherwise leaks it (it is about to be freed with the interpreter anyway).
void release_reference(PyObject* object) noexcept;

}  // namespace gpufeed::python
