#pragma once
// A text field's distinct values, kept once each and bounded (as text_table, without Python:
// the loader's worker threads intern them from the replies of the worker processes).

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpufeed::python::workers {

namespace py = pybind11;

class text_values {
 public:
  /// Values of a `bytes` (else `str`) field; at most `limit` distinct ones.
  text_values(bool bytes, std::size_t limit) : bytes_{bytes}, limit_{limit} {}
  ~text_values();
  text_values(text_values const&) = delete;
  text_values& operator=(text_values const&) = delete;

  /// The id of `value` (sample `index`, field `field`), kept if new.
  /// @throws std::invalid_argument past the limit, naming the sample and the field.
  std::int64_t intern(std::string_view value, std::size_t index, std::string const& field);
  /// Distinct values kept.
  [[nodiscard]] std::size_t size();
  /// The values of `ids` as Python objects (GIL held): each made once per value and kept.
  py::list values(std::span<std::int64_t const> ids);

 private:
  bool bytes_;
  std::size_t limit_;
  std::mutex mutex_;
  std::deque<std::string> values_;
  std::unordered_map<std::string, std::int64_t> ids_;
  std::vector<PyObject*> objects_;  // under the GIL
};

}  // namespace gpufeed::python::workers
