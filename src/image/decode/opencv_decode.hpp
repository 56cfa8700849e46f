#pragma once
/// @file
/// @brief The formats only OpenCV's decoders read here (BMP, TIFF, WebP, JPEG 2000, PNM, Sun
/// raster), decoded with `cv::imdecode` (internal; built where GPUFEED_WITH_OPENCV is ON).

#include <span>
#include <string>

#include "image/decode/image_format.hpp"
#include "image/resample/image_resize.hpp"

namespace gpufeed::detail {

/// @brief Decodes `bytes`, which sniff_image_format found to be `format` (one that
/// needs_opencv), into `pixels` as RGBX (`cv::imdecode` with `IMREAD_COLOR |
/// IMREAD_IGNORE_ORIENTATION`, in RGB order) and returns the view of them. Thread-safe.
/// @throws file_error naming `name` when OpenCV cannot decode it or reports an error.
rgbx_view decode_with_opencv(std::span<unsigned char const> bytes, image_format format,
                             std::string const& name, rgbx_buffer& pixels);

}  // namespace gpufeed::detail
