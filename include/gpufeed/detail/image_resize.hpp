#pragma once
/// @file
/// @brief The image datasets' crop-and-resize: antialiased bilinear resampling (torchvision's
/// `resize(..., antialias=True)`, PIL's `BILINEAR`) of RGBX pixels into RGB (internal).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace gpufeed::detail {

/// @brief Rows of RGBX pixels (4 bytes each; X is ignored). Each row may be read up to 8 bytes
/// past its last pixel (the buffers below leave room for it).
struct rgbx_view {
  std::uint8_t const* data = nullptr;  ///< the first pixel
  std::size_t stride = 0;              ///< bytes from one row to the next
  int width = 0;
  int height = 0;
  int x = 0;  ///< where this view starts in the image it was cut from
  int y = 0;
};

/// @brief Memory for RGBX rows, kept from one image to the next (one per thread).
class rgbx_buffer {
 public:
  /// @brief Room for `height` rows of `width` pixels, each followed by padding that the
  /// resampler may read; the contents are unspecified. @return the first row.
  std::uint8_t* reset(int width, int height);
  [[nodiscard]] std::size_t stride() const noexcept { return stride_; }
  /// @brief The rows as a view (x = y = 0).
  [[nodiscard]] rgbx_view view(int width, int height) const noexcept {
    return {bytes_.data(), stride_, width, height, 0, 0};
  }

 private:
  std::vector<std::uint8_t> bytes_;
  std::size_t stride_ = 0;
};

/// @brief A crop of a `rgbx_view`, in its pixels; it may start and end between pixels.
struct crop_area {
  double x = 0;
  double y = 0;
  double width = 0;
  double height = 0;
};

/// @brief Resamples `area` of `source` to `out_width` x `out_height` RGB pixels (HWC) in `out`,
/// mirrored left-right when `mirror`.
///
/// Each axis is filtered separately with a triangle filter whose support grows with the
/// reduction (plain bilinear when enlarging, an antialiased average when shrinking); input
/// pixels are taken only from the whole pixels the area touches (as if the crop were cut out
/// first, as torchvision crops before it resizes). Vertical first, then horizontal, in 16-bit
/// fixed point (pixels with 7 fraction bits, weights with 15), rounded to 8 bits once at the
/// end. AVX2 where the CPU has it, the same arithmetic in plain C++ elsewhere: the same pixels
/// on every machine. Uses per-thread memory for the intermediate rows (kept between calls).
void resize_rgbx_to_rgb(rgbx_view const& source, crop_area const& area, std::span<std::uint8_t> out,
                        int out_width, int out_height, bool mirror);

}  // namespace gpufeed::detail
