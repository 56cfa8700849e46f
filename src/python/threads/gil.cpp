#include "python/threads/gil.hpp"

namespace gpufeed::python {

namespace {

bool finalizing() noexcept {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// The worker thread's own Python thread state, made on its first acquire and kept (with the
// GIL released) until the thread exits.
struct persistent_thread_state {
  PyGILState_STATE first{};
  PyThreadState* saved = nullptr;

  void ensure() {
    if (saved != nullptr || PyGILState_GetThisThreadState() != nullptr) return;
    first = PyGILState_Ensure();
    saved = PyEval_SaveThread();
  }

  ~persistent_thread_state() {
    if (saved == nullptr || !python_usable()) return;
    PyEval_RestoreThread(saved);
    PyGILState_Release(first);
  }
};

thread_local persistent_thread_state this_thread_state;

}  // namespace

bool python_usable() noexcept {
  return Py_IsInitialized() != 0 && !finalizing();
}

worker_gil::worker_gil() {
  auto const before = std::chrono::steady_clock::now();
  this_thread_state.ensure();
  state_ = PyGILState_Ensure();
  waited_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now() - before)
                   .count();
}

worker_gil::~worker_gil() {
  PyGILState_Release(state_);
}

void release_reference(PyObject* object) noexcept {
  if (object == nullptr || !python_usable()) return;
  auto const state = PyGILState_Ensure();
  Py_DECREF(object);
  PyGILState_Release(state);
}

}  // namespace gpufeed::python
