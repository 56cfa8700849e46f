#include "gpufeed/dtype.hpp"

namespace gpufeed {

std::string_view to_string(dtype type) noexcept {
  switch (type) {
    case dtype::u8:
      return "uint8";
    case dtype::i8:
      return "int8";
    case dtype::u16:
      return "uint16";
    case dtype::i16:
      return "int16";
    case dtype::i32:
      return "int32";
    case dtype::i64:
      return "int64";
    case dtype::f16:
      return "float16";
    case dtype::bf16:
      return "bfloat16";
    case dtype::f32:
      return "float32";
    case dtype::f64:
      return "float64";
    case dtype::boolean:
      return "bool";
  }
  return "unknown";
}

}  // namespace gpufeed
