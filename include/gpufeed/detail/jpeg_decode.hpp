#pragma once
/// @file
/// @brief JPEG decoding with libjpeg where every problem libjpeg reports is an error (internal).
///
/// cv::imdecode lets libjpeg decode damaged entropy-coded data with only a warning on stderr,
/// which yields a garbled picture; this decoder turns libjpeg's warnings into errors as well.

#include <opencv2/core.hpp>
#include <span>
#include <string>

namespace gpufeed::detail {

/// @brief Whether `bytes` start as a JPEG does (SOI, then another marker: FF D8 FF): the test
/// OpenCV uses to pick its JPEG codec, so that the same files take the same decoder as before.
[[nodiscard]] bool looks_like_jpeg(std::span<unsigned char const> bytes) noexcept;

/// @brief Whether `bytes` start with the PNG signature (89 50 4E 47 0D 0A 1A 0A).
[[nodiscard]] bool looks_like_png(std::span<unsigned char const> bytes) noexcept;

/// @brief Decodes the JPEG `bytes` to 8-bit BGR, as `cv::imdecode` with `IMREAD_COLOR |
/// IMREAD_IGNORE_ORIENTATION` does (grey is replicated; CMYK and YCCK are converted), at
/// 1/`reduction` of its size (1, 2, 4 or 8) through libjpeg's DCT scaling.
///
/// A decoded size over OPENCV_IO_MAX_IMAGE_PIXELS (default 2^30) pixels is refused, as OpenCV
/// refuses it, so that a forged header cannot ask for gigabytes.
/// @throws file_error naming `name` for any error or warning libjpeg reports ("corrupt JPEG:"
/// and libjpeg's message) and for an image too large. @throws logic_error for another
/// `reduction`.
[[nodiscard]] cv::Mat decode_jpeg(std::span<unsigned char const> bytes, int reduction,
                                  std::string const& name);

}  // namespace gpufeed::detail
