#include "python/samples/text_table.hpp"

#include <stdexcept>

namespace gpufeed::python {

bool is_text(py::handle object) noexcept {
  return PyUnicode_Check(object.ptr()) != 0 || PyBytes_Check(object.ptr()) != 0;
}

text_table::text_table(bool bytes, std::size_t limit)
    : bytes_{bytes}, limit_{limit}, ids_{py::dict{}}, values_{py::list{}} {}

std::int64_t text_table::intern(py::handle value, leaf_place const& where) {
  char const* const want = bytes_ ? "bytes" : "str";
  bool const right = bytes_ ? PyBytes_Check(value.ptr()) != 0 : PyUnicode_Check(value.ptr()) != 0;
  if (!right) {
    throw std::invalid_argument{where.text() + " is " + std::string{Py_TYPE(value.ptr())->tp_name} +
                                " but the first sample's was " + want +
                                "; return one type per field"};
  }
  // An exact str or bytes as the key: a subclass (numpy.str_) could hash or compare in Python
  // code, which may hand the GIL to another worker between the lookup and the insert below.
  py::object key;
  if (bytes_) {
    key = PyBytes_CheckExact(value.ptr()) != 0
              ? py::reinterpret_borrow<py::object>(value)
              : py::reinterpret_steal<py::object>(PyBytes_FromStringAndSize(
                    PyBytes_AS_STRING(value.ptr()), PyBytes_GET_SIZE(value.ptr())));
  } else {
    key = py::reinterpret_steal<py::object>(PyUnicode_FromObject(value.ptr()));
  }
  if (!key) throw py::error_already_set();
  PyObject* const known = PyDict_GetItemWithError(ids_.ptr(), key.ptr());
  if (known != nullptr) return PyLong_AsLongLong(known);
  if (PyErr_Occurred() != nullptr) throw py::error_already_set();
  auto const id = static_cast<std::size_t>(PyList_GET_SIZE(values_.ptr()));
  if (id >= limit_) {
    throw std::invalid_argument{too_many_text_values(where.text(), limit_, want)};
  }
  if (PyList_Append(values_.ptr(), key.ptr()) != 0) throw py::error_already_set();
  auto const number = py::int_(id);
  if (PyDict_SetItem(ids_.ptr(), key.ptr(), number.ptr()) != 0) throw py::error_already_set();
  return static_cast<std::int64_t>(id);
}

py::list text_table::values(std::span<std::int64_t const> ids) const {
  auto const known = PyList_GET_SIZE(values_.ptr());
  py::list out(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= known) {
      throw std::out_of_range{"text id " + std::to_string(ids[i]) + " at position " +
                              std::to_string(i) + " of the batch is not in the table (" +
                              std::to_string(known) + " values)"};
    }
    PyObject* const v = PyList_GET_ITEM(values_.ptr(), static_cast<Py_ssize_t>(ids[i]));
    Py_INCREF(v);
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), v);
  }
  return out;
}

std::size_t text_table::size() const noexcept {
  return static_cast<std::size_t>(PyList_GET_SIZE(values_.ptr()));
}

void text_table::clear() noexcept {
  ids_ = py::object{};
  values_ = py::object{};
}

void text_table::clear_leaking() noexcept {
  (void)ids_.release();
  (void)values_.release();
}

std::string too_many_text_values(std::string const& where, std::size_t limit, char const* kind) {
  return where + ": more than " + std::to_string(limit) + " distinct " + kind +
         " values; gpufeed keeps each distinct text value of a field once, to hand it back with "
         "its batch, and keeps at most the dataset's length + " +
         std::to_string(text_values_beyond_length) +
         ": return text that repeats (file names, labels, ids), or encode free text as arrays "
         "(token ids) in __getitem__";
}

}  // namespace gpufeed::python
