#pragma once
/// @file
/// @brief PNG decoding with libpng into the RGBX rows the resampler reads (internal).

#include <span>
#include <string>

#include "image/resample/image_resize.hpp"

namespace gpufeed::detail {

/// @brief Decodes the PNG `bytes` into `pixels` (resized to the image) and returns the view of
/// them. The pixels are those `cv::imdecode` with `IMREAD_COLOR` gives, in RGB order: every bit
/// depth, colour type (grey, grey and alpha, palette, RGB, RGBA) and interlacing; 16-bit samples
/// keep their high byte, grey is repeated into R, G and B, palettes are looked up, and alpha
/// (also a palette's or a colour's tRNS transparency) is dropped, not composited. No gamma or
/// colour-profile correction. The fourth byte of each pixel is 255.
///
/// Thread-safe: each call has its own libpng state; `pixels` belongs to the caller.
/// @throws file_error naming `name`: libpng's message for a corrupt, truncated or unsupported
/// PNG (CRC errors in critical chunks included), or the size when width x height is over
/// max_decoded_pixels().
rgbx_view decode_png_rgbx(std::span<unsigned char const> bytes, std::string const& name,
                          rgbx_buffer& pixels);

}  // namespace gpufeed::detail
