#include "python/bindings/python_error.hpp"

#include "python/threads/gil.hpp"

namespace gpufeed::python {

namespace {
std::string text_of(PyObject* object) {
  PyObject* text = PyObject_Str(object);
  if (text == nullptr) {
    PyErr_Clear();
    return "<unprintable>";
  }
  Py_ssize_t size = 0;
  char const* utf8 = PyUnicode_AsUTF8AndSize(text, &size);
  std::string result = utf8 != nullptr ? std::string{utf8, static_cast<std::size_t>(size)} : "";
  if (utf8 == nullptr) PyErr_Clear();
  Py_DECREF(text);
  return result;
}
}  // namespace

python_error python_error::fetch() {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (value == nullptr) {  // an error indicator with no value: keep the type as the exception
    value = type;
    Py_XINCREF(value);
  }
  if (traceback != nullptr && value != nullptr) PyException_SetTraceback(value, traceback);
  std::string message = type != nullptr
                            ? std::string{reinterpret_cast<PyTypeObject*>(type)->tp_name} + ": "
                            : std::string{};
  if (value != nullptr) message += text_of(value);
  Py_XDECREF(type);
  Py_XDECREF(traceback);
  return python_error{message, std::shared_ptr<PyObject>{value, release_reference}};
}

PyObject* python_error::exception() const noexcept {
  Py_XINCREF(exception_.get());
  return exception_.get();
}

}  // namespace gpufeed::python
