#include "image/decode/decode_limits.hpp"

#include <cstdlib>

namespace gpufeed::detail {

std::uint64_t max_decoded_pixels() {
  static std::uint64_t const limit = [] {
    std::uint64_t value = std::uint64_t{1} << 30U;
    char const* text = std::getenv("OPENCV_IO_MAX_IMAGE_PIXELS");  // NOLINT(concurrency-mt-unsafe)
    if (text != nullptr) {
      char* end = nullptr;
      unsigned long long const parsed = std::strtoull(text, &end, 10);
      if (end != text && *end == '\0' && parsed > 0) value = parsed;
    }
    return value;
  }();
  return limit;
}

}  // namespace gpufeed::detail
