#pragma once
/// @file
/// @brief What one sample is made of: named, typed, fixed-shape fields.
///
/// @code
/// gpufeed::sample_spec spec;
/// spec.add("image", gpufeed::dtype::u8, {224, 224, 3}).add("label", gpufeed::dtype::i64, {});
/// // spec.bytes_per_sample() == 224 * 224 * 3 + 8
/// @endcode

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpufeed/dtype.hpp"

namespace gpufeed {

/// @brief A shape as text, e.g. `[3,224,224]` (`[]` for a scalar): for messages.
[[nodiscard]] std::string shape_text(std::span<std::int64_t const> shape);

/// @brief The most dimensions a field may have (the batch adds one more).
inline constexpr std::size_t max_field_dims = 7;

/// @brief One named array of a sample. An empty shape is a scalar.
struct field {
  std::string name;
  dtype type = dtype::u8;
  std::vector<std::int64_t> shape;

  /// @brief Elements in one sample of this field (1 for a scalar).
  /// @throws logic_error naming the field and its shape when a dimension is negative or the
  /// product of the dimensions does not fit in std::size_t (never a wrapped count). Fields of a
  /// `sample_spec` were checked when added, so for them it never throws.
  [[nodiscard]] std::size_t elements() const;
  /// @brief Bytes in one sample of this field. @throws logic_error as `elements()` does, and
  /// when elements x the dtype's size does not fit in std::size_t.
  [[nodiscard]] std::size_t bytes() const;
  friend bool operator==(field const&, field const&) = default;
};

/// @brief The ordered fields of one sample. Every sample of a dataset has this layout.
class sample_spec {
 public:
  sample_spec() = default;
  /// @throws logic_error on an empty or repeated name, a negative dimension, too many dims, or a
  /// size that does not fit in std::size_t (a field's elements or bytes, or the sample's bytes).
  explicit sample_spec(std::vector<field> fields);

  /// @brief Appends a field. @throws logic_error as the constructor does.
  sample_spec& add(std::string name, dtype type, std::vector<std::int64_t> shape);

  /// @brief Number of fields.
  [[nodiscard]] std::size_t size() const noexcept { return fields_.size(); }
  [[nodiscard]] bool empty() const noexcept { return fields_.empty(); }
  [[nodiscard]] field const& operator[](std::size_t i) const { return fields_[i]; }
  [[nodiscard]] std::span<field const> fields() const noexcept { return fields_; }
  /// @brief The position of the field called `name`, if there is one.
  [[nodiscard]] std::optional<std::size_t> find(std::string_view name) const noexcept;
  /// @brief Bytes of one whole sample (all fields); checked when each field was added.
  [[nodiscard]] std::size_t bytes_per_sample() const noexcept { return bytes_; }
  /// @brief A readable form, e.g. `image:uint8[224,224,3] label:int64[]`.
  [[nodiscard]] std::string to_string() const;

  friend bool operator==(sample_spec const&, sample_spec const&) = default;

 private:
  // Checks `f` against the fields before it; returns the sample's bytes with `f` added.
  [[nodiscard]] std::size_t validate(field const& f) const;
  std::vector<field> fields_;
  std::size_t bytes_ = 0;  // the sum of the fields' bytes
};

}  // namespace gpufeed
