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

/// @brief The most dimensions a field may have (the batch adds one more).
inline constexpr std::size_t max_field_dims = 7;

/// @brief One named array of a sample. An empty shape is a scalar.
struct field {
  std::string name;
  dtype type = dtype::u8;
  std::vector<std::int64_t> shape;

  /// @brief Elements in one sample of this field (1 for a scalar).
  [[nodiscard]] std::size_t elements() const noexcept;
  /// @brief Bytes in one sample of this field.
  [[nodiscard]] std::size_t bytes() const noexcept { return elements() * size_of(type); }
  friend bool operator==(field const&, field const&) = default;
};

/// @brief The ordered fields of one sample. Every sample of a dataset has this layout.
class sample_spec {
 public:
  sample_spec() = default;
  /// @throws logic_error on an empty or repeated name, a dimension below 1, or too many dims.
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
  /// @brief Bytes of one whole sample (all fields).
  [[nodiscard]] std::size_t bytes_per_sample() const noexcept;
  /// @brief A readable form, e.g. `image:uint8[224,224,3] label:int64[]`.
  [[nodiscard]] std::string to_string() const;

  friend bool operator==(sample_spec const&, sample_spec const&) = default;

 private:
  static void validate(field const& f, std::span<field const> before);
  std::vector<field> fields_;
};

}  // namespace gpufeed
