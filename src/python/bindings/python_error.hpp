#pragma once
// A Python exception raised inside a worker thread, carried through the C++ loader to the
// consumer, so that gpufeed.SampleError can be chained from it with its traceback intact.

#include <Python.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "gpufeed/error.hpp"

namespace gpufeed::python {

class python_error : public std::runtime_error {
 public:
  /// Takes the Python error indicator (set on this thread, GIL held): normalized, with its
  /// traceback attached to the exception object. The message is "Type: text".
  static python_error fetch();

  /// The exception object (a new reference; GIL held).
  [[nodiscard]] PyObject* exception() const noexcept;

 private:
  python_error(std::string const& message, std::shared_ptr<PyObject> exception)
      : std::runtime_error{message}, exception_{std::move(exception)} {}
  std::shared_ptr<PyObject> exception_;  // dropped under the GIL, from whatever thread
};

/// A Python exception after which a worker thread cannot go on (its worker_init_fn raised):
/// a worker_error, so the loader stops, that reaches the caller as the Python exception itself.
class python_worker_error : public worker_error {
 public:
  python_worker_error(std::string const& context, python_error original)
      : worker_error{context + ": " + original.what()}, original_{std::move(original)} {}
  [[nodiscard]] python_error const& original() const noexcept { return original_; }

 private:
  python_error original_;
};

}  // namespace gpufeed::python
