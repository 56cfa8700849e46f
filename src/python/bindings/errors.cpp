#include "python/bindings/errors.hpp"

#include <stdexcept>
#include <string>

#include "gpufeed/error.hpp"
#include "python/bindings/python_error.hpp"
#include "python/bindings/python_terms.hpp"
#include "python/workers/process_dataset.hpp"

namespace gpufeed::python {

namespace py = pybind11;

namespace {

// What `e` says, in the words of the Python DataLoader's arguments.
std::string said(std::exception const& e) {
  return in_python_terms(e.what());
}

py::object error_class(char const* name) {
  return py::module_::import("gpufeed.errors").attr(name);
}

void raise(py::object const& type, py::object const& exception) {
  PyErr_SetObject(type.ptr(), exception.ptr());
}

py::object file_or_none(std::string const& file) {
  return file.empty() ? py::object{py::none()} : py::object{py::str(file)};
}

// Adds `note` to `exception` where Python has notes (3.11): shown under its traceback.
void add_note(py::handle exception, std::string const& note) {
  if (py::hasattr(exception, "add_note")) {
    exception.attr("add_note")(note);
  }
}

// The dataset's exception raised in a worker process, made again as its own type.
py::object rebuilt(std::string const& pickled, std::string const& context) {
  return py::module_::import("gpufeed._workers")
      .attr("rebuild_exception")(py::bytes(pickled), context);
}

void raise_object(py::object const& exception) {
  raise(py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr()))),
        exception);
}

// gpufeed.SampleError for `e`, its cause set to the dataset's exception where it is Python's.
py::object sample_error_of(sample_error const& e, PyObject* cause) {
  auto const type = error_class("SampleError");
  py::list failures;  // every failed sample of the batch, in batch order
  for (auto const& f : e.failures()) {
    failures.append(py::make_tuple(f.index, f.epoch, file_or_none(f.file), f.worker, f.message));
  }
  auto exception =
      type(said(e), e.index(), e.epoch(), file_or_none(e.file()), e.worker(), failures);
  if (cause != nullptr) {
    Py_INCREF(cause);
    PyException_SetCause(exception.ptr(), cause);  // steals the new reference
  }
  return exception;
}

// A Python dataset's failure reaches the caller as the dataset's own exception (an
// `except KeyError` written for torch catches it), with gpufeed's account of the batch: a note
// (Python 3.11) and its `sample_error` attribute (a gpufeed.SampleError: index, epoch,
// failures). A C++ dataset's failure, or gpufeed's refusal of a sample, is a SampleError.
void raise_sample_error(sample_error const& e) {
  py::object exception;
  try {
    std::rethrow_if_nested(e);
  } catch (python_error const& original) {
    exception = py::reinterpret_steal<py::object>(original.exception());
    add_note(exception, said(e));
  } catch (workers::remote_python_error const& original) {
    exception = rebuilt(original.pickled(), said(e));
  } catch (...) {
  }
  if (!exception) {
    raise(error_class("SampleError"), sample_error_of(e, nullptr));
    return;
  }
  try {
    exception.attr("sample_error") = sample_error_of(e, nullptr);
  } catch (py::error_already_set const&) {
    // an exception type that takes no attributes (__slots__): the note says it all
  }
  raise_object(exception);
}

// gpufeed.WorkerError for a dead worker process, its message made in Python from the fields.
py::object worker_death_of(workers::worker_death const& e) {
  using ending = workers::worker_death::ending;
  auto const& held = e.held();
  py::list samples;
  for (auto const index : held.indices) samples.append(index);
  py::object const none = py::none();
  return error_class("WorkerError")
      .attr("died")(
          e.worker(), e.pid(), e.how() == ending::exited ? py::object{py::int_(e.code())} : none,
          e.how() == ending::killed ? py::object{py::int_(e.code())} : none, py::tuple{samples},
          held.indices.empty() ? none : py::object{py::int_(held.epoch)},
          held.indices.empty() ? py::object{py::str(held.task)} : none);
}

}  // namespace

void register_exception_translation() {
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (python_error const& e) {
      py::object const exception = py::reinterpret_steal<py::object>(e.exception());
      raise(
          py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr()))),
          exception);
    } catch (sample_error const& e) {
      raise_sample_error(e);
    } catch (python_worker_error const& e) {
      py::object const exception = py::reinterpret_steal<py::object>(e.original().exception());
      add_note(exception, said(e));
      raise_object(exception);
    } catch (workers::remote_worker_error const& e) {
      raise_object(rebuilt(e.pickled(),
                           "gpufeed: the worker process cannot go on, so the "
                           "loader stopped"));
    } catch (workers::worker_death const& e) {
      raise(error_class("WorkerError"), worker_death_of(e));
    } catch (worker_error const& e) {
      auto const type = error_class("WorkerError");
      raise(type, type(said(e)));
    } catch (timeout_error const& e) {
      auto const type = error_class("LoaderTimeoutError");
      raise(type, type(said(e), e.index()));
    } catch (file_error const& e) {
      auto const type = error_class("FileError");
      raise(type, type(said(e), e.path()));
    } catch (out_of_memory const& e) {
      PyErr_SetString(PyExc_MemoryError, said(e).c_str());
    } catch (logic_error const& e) {
      PyErr_SetString(PyExc_ValueError, said(e).c_str());
    } catch (std::invalid_argument const& e) {
      PyErr_SetString(PyExc_ValueError, said(e).c_str());
    }
  });
}

}  // namespace gpufeed::python
