#pragma once
// The str and bytes leaves of Python samples. A batch holds fixed-size fields in pinned memory,
// so a text leaf's field holds an int64 id instead, and the text itself is kept here once per
// distinct value; the batch gets the values back as a list, as torch's default collate returns
// strings. Ids survive what the core does to a batch's memory (skipped samples compacted, the
// copy to the GPU) because they are plain numbers.
//
// Bounded: each field keeps at most `limit` distinct values (python_dataset gives the dataset's
// length plus text_values_beyond_length), for the loader's life; a dataset that makes new text
// on every read (random captions) is refused with a SampleError rather than left to grow
// without end.

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "python/samples/sample_leaf.hpp"

namespace gpufeed::python {

namespace py = pybind11;

/// The distinct text values a field may keep beyond the dataset's length.
inline constexpr std::size_t text_values_beyond_length = 65536;

class text_table {
 public:
  /// `bytes`: the field holds bytes (else str); `limit`: distinct values kept at most.
  text_table(bool bytes, std::size_t limit);

  /// The id of `value` (GIL held), adding it when new. `where` names the sample and field.
  /// @throws std::invalid_argument when `value` is not of the field's type (str or bytes,
  /// subclasses such as numpy.str_ included), or when it would be value number `limit` + 1.
  [[nodiscard]] std::int64_t intern(py::handle value, leaf_place const& where);

  /// The values of `ids` as a list (GIL held). @throws std::out_of_range for an unknown id.
  [[nodiscard]] py::list values(std::span<std::int64_t const> ids) const;

  [[nodiscard]] std::size_t size() const noexcept;

  /// Drops the Python objects (GIL held), or forgets them without a GIL (an interpreter that
  /// is gone); the table is unusable afterwards.
  void clear() noexcept;
  void clear_leaking() noexcept;

 private:
  bool bytes_;
  std::size_t limit_;
  py::object ids_;     // a dict, value -> id; keys are exact str or bytes (no Python code hashes)
  py::object values_;  // a list, id -> value
};

/// What a text field that would keep value number `limit` + 1 says: `where` names the sample
/// and field, `kind` is "str" or "bytes".
[[nodiscard]] std::string too_many_text_values(std::string const& where, std::size_t limit,
                                               char const* kind);

/// Whether `object` is a text leaf (str or bytes, or a subclass).
[[nodiscard]] bool is_text(py::handle object) noexcept;

}  // namespace gpufeed::python
