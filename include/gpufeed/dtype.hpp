#pragma once
/// @file
/// @brief Element types of sample fields.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace gpufeed {

/// @brief The element type of a field. `f16` and `bf16` are stored as 16-bit patterns;
/// `boolean` is one byte holding 0 or 1 (NumPy's and torch's `bool`).
enum class dtype : std::uint8_t { u8, i8, u16, i16, i32, i64, f16, bf16, f32, f64, boolean };

/// @brief Bytes per element of `type`.
[[nodiscard]] constexpr std::size_t size_of(dtype type) noexcept {
  switch (type) {
    case dtype::u8:
    case dtype::i8:
    case dtype::boolean:
      return 1;
    case dtype::u16:
    case dtype::i16:
    case dtype::f16:
    case dtype::bf16:
      return 2;
    case dtype::i32:
    case dtype::f32:
      return 4;
    case dtype::i64:
    case dtype::f64:
      return 8;
  }
  return 0;
}

/// @brief The type's short name, as NumPy spells it ("uint8", "float32", "bfloat16", "bool").
[[nodiscard]] std::string_view to_string(dtype type) noexcept;

/// @brief Whether elements of `type` may be accessed as `T`: the exact C++ type, or
/// `std::uint16_t` for the 16-bit floats, `bool` or `std::uint8_t` for `boolean`, or `std::byte`
/// for any type.
template <class T>
[[nodiscard]] constexpr bool dtype_matches(dtype type) noexcept {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, std::byte>) {
    return true;
  } else if constexpr (std::is_same_v<U, std::uint8_t>) {
    return type == dtype::u8 || type == dtype::boolean;
  } else if constexpr (std::is_same_v<U, bool>) {
    return type == dtype::boolean;
  } else if constexpr (std::is_same_v<U, std::int8_t>) {
    return type == dtype::i8;
  } else if constexpr (std::is_same_v<U, std::uint16_t>) {
    return type == dtype::u16 || type == dtype::f16 || type == dtype::bf16;
  } else if constexpr (std::is_same_v<U, std::int16_t>) {
    return type == dtype::i16;
  } else if constexpr (std::is_same_v<U, std::int32_t>) {
    return type == dtype::i32;
  } else if constexpr (std::is_same_v<U, std::int64_t>) {
    return type == dtype::i64;
  } else if constexpr (std::is_same_v<U, float>) {
    return type == dtype::f32;
  } else if constexpr (std::is_same_v<U, double>) {
    return type == dtype::f64;
  } else {
    return false;
  }
}

}  // namespace gpufeed
