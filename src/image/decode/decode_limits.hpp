#pragma once
/// @file
/// @brief The largest image the decoders allocate pixels for (internal).

#include <cstdint>

namespace gpufeed::detail {

/// @brief The most pixels (width times height) a decoder allocates for one image: 2^30, or the
/// value of `OPENCV_IO_MAX_IMAGE_PIXELS` where it is set, so that a limit set for OpenCV's
/// decoders holds for every format. Read once, on first use; thread-safe.
[[nodiscard]] std::uint64_t max_decoded_pixels();

}  // namespace gpufeed::detail
