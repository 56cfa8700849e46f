#pragma once
/// @file
/// @brief 8-bit RGB <-> HSV with the hue over a full turn in 0..255, the hue jitter's colour
/// space (internal).
///
/// The pixels are those of OpenCV's `cvtColor` with `COLOR_RGB2HSV_FULL` and
/// `COLOR_HSV2RGB_FULL`, which the hue jitter used: RGB to HSV exactly, in integers; HSV to RGB
/// as OpenCV's vector path computes it on x86-64 with AVX2 (single-precision products, the
/// `1 - s h` terms fused, results truncated, the hue read over 255 steps), which covers all of a
/// row but its last `width % 32` pixels, where OpenCV rounds instead (at most one level apart).
/// image_hue_test checks both against OpenCV where it is built in.

#include <cstdint>
#include <span>

namespace gpufeed::detail {

/// @brief HSV of each RGB pixel: H in 0..255 for a full turn, S and V in 0..255. `rgb` and `hsv`
/// hold the same number of pixels, three bytes each; they may be the same memory.
void rgb_to_hsv_full(std::span<std::uint8_t const> rgb, std::span<std::uint8_t> hsv) noexcept;

/// @brief RGB of each HSV pixel (the inverse of rgb_to_hsv_full up to rounding). `hsv` and `rgb`
/// hold the same number of pixels; they may be the same memory.
void hsv_full_to_rgb(std::span<std::uint8_t const> hsv, std::span<std::uint8_t> rgb) noexcept;

}  // namespace gpufeed::detail
