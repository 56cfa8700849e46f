#include "python/workers/text_values.hpp"

#include <stdexcept>

#include "python/samples/text_table.hpp"
#include "python/threads/gil.hpp"

namespace gpufeed::python::workers {

text_values::~text_values() {
  for (auto* object : objects_) release_reference(object);
}

std::int64_t text_values::intern(std::string_view value, std::size_t index,
                                 std::string const& field) {
  std::lock_guard const lock{mutex_};
  auto const found = ids_.find(std::string{value});
  if (found != ids_.end()) return found->second;
  if (values_.size() >= limit_) {
    throw std::invalid_argument{
        too_many_text_values("sample " + std::to_string(index) + ", field '" + field + "'", limit_,
                             bytes_ ? "bytes" : "str")};
  }
  auto const id = static_cast<std::int64_t>(values_.size());
  values_.emplace_back(value);
  ids_.emplace(values_.back(), id);
  return id;
}

std::size_t text_values::size() {
  std::lock_guard const lock{mutex_};
  return values_.size();
}

py::list text_values::values(std::span<std::int64_t const> ids) {
  py::list out;
  for (auto const id : ids) {
    std::string_view value;
    {
      std::lock_guard const lock{mutex_};
      if (id < 0 || static_cast<std::size_t>(id) >= values_.size()) {
        throw std::out_of_range{"gpufeed: an unknown text id " + std::to_string(id)};
      }
      value = values_[static_cast<std::size_t>(id)];  // deque: stable while others are added
    }
    auto const i = static_cast<std::size_t>(id);
    if (objects_.size() <= i) objects_.resize(i + 1, nullptr);
    if (objects_[i] == nullptr) {
      objects_[i] = bytes_ ? PyBytes_FromStringAndSize(value.data(), std::ssize(value))
                           : PyUnicode_DecodeUTF8(value.data(), std::ssize(value), "strict");
      if (objects_[i] == nullptr) throw py::error_already_set();
    }
    out.append(py::reinterpret_borrow<py::object>(objects_[i]));
  }
  return out;
}

}  // namespace gpufeed::python::workers
