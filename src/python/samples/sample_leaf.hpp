#pragma once
// One leaf of a Python sample (a number, an ndarray, a CPU tensor) seen as typed, strided
// memory, and its copy into a batch slot.

#include <Python.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "gpufeed/dtype.hpp"
#include "gpufeed/sample_spec.hpp"
#include "python/bindings/dlpack_abi.hpp"

namespace gpufeed::python {

/// Where a leaf is, for error messages only: built into text only when an error is raised (the
/// reads that succeed, under the GIL, build no strings).
struct leaf_place {
  std::optional<std::size_t> index;  ///< the sample's index, where the reader knows it
  std::string const* path;           ///< the field's name
  [[nodiscard]] std::string text() const {
    auto field = "field '" + *path + "'";
    return index ? "sample " + std::to_string(*index) + ", " + field : field;
  }
};

/// A leaf's memory, held while it is copied. Take it with the GIL held; copy() needs no GIL;
/// destroy it with the GIL held.
class leaf_view {
 public:
  /// Reads `object` as a leaf; `where` names it in errors ("sample 17, field 'image'").
  /// @throws std::invalid_argument for objects that are not numbers or arrays (strings, None,
  /// CUDA tensors, ...), saying what to return instead; python_error when Python raised.
  leaf_view(PyObject* object, leaf_place const& where);
  ~leaf_view();
  leaf_view(leaf_view const&) = delete;
  leaf_view& operator=(leaf_view const&) = delete;

  [[nodiscard]] dtype type() const noexcept { return type_; }
  [[nodiscard]] std::size_t rank() const noexcept { return rank_; }
  [[nodiscard]] std::int64_t const* shape() const noexcept { return shape_.data(); }
  /// The shape as a sample_spec field's shape.
  [[nodiscard]] std::vector<std::int64_t> shape_vector() const {
    return {shape_.begin(), shape_.begin() + static_cast<std::ptrdiff_t>(rank_)};
  }
  [[nodiscard]] std::size_t bytes() const noexcept;

  /// Copies the elements, in row-major order, into `out` (bytes() long). No GIL needed.
  void copy_to(std::byte* out) const noexcept;

 private:
  void from_scalar(PyObject* object);
  bool from_buffer(PyObject* object, leaf_place const& where);
  void from_dlpack(PyObject* capsule, leaf_place const& where);

  dtype type_ = dtype::u8;
  std::size_t rank_ = 0;
  std::array<std::int64_t, max_field_dims> shape_{};
  std::array<std::int64_t, max_field_dims> strides_{};  // in bytes
  std::byte const* data_ = nullptr;
  std::array<std::byte, 8> scalar_{};  // a Python number's value
  Py_buffer buffer_{};
  bool has_buffer_ = false;
  dlpack::managed_tensor* managed_ = nullptr;
  PyObject* keep_ = nullptr;  // an object made here (a detached tensor's array) to hold
};

}  // namespace gpufeed::python
