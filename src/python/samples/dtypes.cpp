#include "python/samples/dtypes.hpp"

#include <array>

namespace gpufeed::python {

namespace {
constexpr std::array all_dtypes{dtype::u8,  dtype::i8,  dtype::u16,    dtype::i16,
                                dtype::i32, dtype::i64, dtype::f16,    dtype::bf16,
                                dtype::f32, dtype::f64, dtype::boolean};
}  // namespace

dlpack::data_type to_dlpack(dtype type) noexcept {
  auto const bits = static_cast<std::uint8_t>(size_of(type) * 8);
  switch (type) {
    case dtype::u8:
    case dtype::u16:
      return {dlpack::unsigned_int, bits, 1};
    case dtype::i8:
    case dtype::i16:
    case dtype::i32:
    case dtype::i64:
      return {dlpack::signed_int, bits, 1};
    case dtype::f16:
    case dtype::f32:
    case dtype::f64:
      return {dlpack::floating, bits, 1};
    case dtype::bf16:
      return {dlpack::bfloat, bits, 1};
    case dtype::boolean:
      return {dlpack::boolean, bits, 1};
  }
  return {dlpack::unsigned_int, 8, 1};
}

std::optional<dtype> from_dlpack(dlpack::data_type type) noexcept {
  if (type.lanes != 1) return std::nullopt;
  for (auto const candidate : all_dtypes) {
    auto const d = to_dlpack(candidate);
    if (d.code == type.code && d.bits == type.bits) return candidate;
  }
  return std::nullopt;
}

std::optional<dtype> from_buffer_format(std::string_view format, std::size_t itemsize) noexcept {
  // A byte-order prefix: native ('@', '='), or little-endian ('<') on this little-endian host.
  if (!format.empty() && (format[0] == '@' || format[0] == '=' || format[0] == '<')) {
    format.remove_prefix(1);
  }
  if (format.size() != 1) return std::nullopt;
  auto const sized = [&](dtype type) -> std::optional<dtype> {
    if (size_of(type) == itemsize) return type;
    return std::nullopt;
  };
  auto const signed_of = [&]() -> std::optional<dtype> {
    switch (itemsize) {
      case 1:
        return dtype::i8;
      case 2:
        return dtype::i16;
      case 4:
        return dtype::i32;
      case 8:
        return dtype::i64;
      default:
        return std::nullopt;
    }
  };
  switch (format[0]) {
    case '?':
      return sized(dtype::boolean);
    case 'B':
      return sized(dtype::u8);
    case 'H':
      return sized(dtype::u16);
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
      return signed_of();
    case 'e':
      return sized(dtype::f16);
    case 'f':
      return sized(dtype::f32);
    case 'd':
      return sized(dtype::f64);
    default:
      return std::nullopt;  // unsigned 32/64 (torch has none), complex, objects, structures
  }
}

std::optional<dtype> dtype_named(std::string_view name) noexcept {
  for (auto const candidate : all_dtypes) {
    if (to_string(candidate) == name) return candidate;
  }
  return std::nullopt;
}

}  // namespace gpufeed::python
