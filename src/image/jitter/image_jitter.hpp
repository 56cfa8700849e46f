#pragma once
/// @file
/// @brief The image datasets' colour jitter operations on RGB pixels (HWC, uint8), with
/// torchvision's `ColorJitter` semantics (internal).

#include <cstdint>
#include <span>

namespace gpufeed::detail {

/// @brief Each value times `factor`, rounded and clamped to 0..255 (`adjust_brightness`).
void adjust_brightness(std::span<std::uint8_t> rgb, double factor) noexcept;

/// @brief Each value blended with the mean luma of the image (0.299 R + 0.587 G + 0.114 B):
/// `factor * v + (1 - factor) * mean`, rounded and clamped (`adjust_contrast`).
void adjust_contrast(std::span<std::uint8_t> rgb, double factor) noexcept;

/// @brief Each pixel blended with its own luma: `factor * v + (1 - factor) * luma`, rounded and
/// clamped (`adjust_saturation`). In fixed point: within one grey level of the exact result.
void adjust_saturation(std::span<std::uint8_t> rgb, double factor) noexcept;

/// @brief The hue turned by `shift` of a full turn (-0.5 .. 0.5), in 8-bit HSV with the hue in
/// 256 steps (`adjust_hue`; the conversions of hsv.hpp, OpenCV's `COLOR_RGB2HSV_FULL` and
/// `COLOR_HSV2RGB_FULL`). Defined in image_hue.cpp.
void adjust_hue(std::span<std::uint8_t> rgb, double shift) noexcept;

}  // namespace gpufeed::detail
