#include "errors.hpp"

#include <stdexcept>

#include "gpufeed/error.hpp"
#include "python_error.hpp"

namespace gpufeed::python {

namespace py = pybind11;

namespace {

py::object error_class(char const* name) {
  return py::module_::import("gpufeed.errors").attr(name);
}

void raise(py::object const& type, py::object const& exception) {
  PyErr_SetObject(type.ptr(), exception.ptr());
}

py::object file_or_none(std::string const& file) {
  return file.empty() ? py::object{py::none()} : py::object{py::str(file)};
}

void raise_sample_error(sample_error const& e) {
  auto const type = error_class("SampleError");
  py::list failures;  // every failed sample of the batch, in batch order
  for (auto const& f : e.failures()) {
    failures.append(py::make_tuple(f.index, f.epoch, file_or_none(f.file), f.worker, f.message));
  }
  auto const exception =
      type(e.what(), e.index(), e.epoch(), file_or_none(e.file()), e.worker(), failures);
  PyObject* cause = nullptr;
  try {
    std::rethrow_if_nested(e);
  } catch (python_error const& original) {
    cause = original.exception();
  } catch (...) {  // a C++ dataset's exception: its text is in the message already
  }
  if (cause != nullptr) PyException_SetCause(exception.ptr(), cause);  // steals `cause`
  raise(type, exception);
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
    } catch (timeout_error const& e) {
      auto const type = error_class("LoaderTimeoutError");
      raise(type, type(e.what(), e.index()));
    } catch (file_error const& e) {
      auto const type = error_class("FileError");
      raise(type, type(e.what(), e.path()));
    } catch (out_of_memory const& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (logic_error const& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (std::invalid_argument const& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
}

}  // namespace gpufeed::python
