#pragma once
/// @file
/// @brief The image datasets' crop-and-resize: antialiased bilinear resampling (torchvision's
/// `resize(..., antialias=True)`, PIL's `BILINEAR`) of RGBX pixels into RGB (internal).

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
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
  /// resampler may read; the contents are unspecified. Every row starts 8 bytes past a 64-byte
  /// boundary (on none of 16 bytes: libjpeg-turbo writes such rows past the cache).
  /// @return the first row.
  std::uint8_t* reset(int width, int height);
  [[nodiscard]] std::size_t stride() const noexcept { return stride_; }
  /// @brief The rows as a view (x = y = 0).
  [[nodiscard]] rgbx_view view(int width, int height) const noexcept {
    return {bytes_.data() + offset_, stride_, width, height, 0, 0};
  }

 private:
  std::vector<std::uint8_t> bytes_;
  std::size_t offset_ = 0;  // of the first row in bytes_
  std::size_t stride_ = 0;
};

/// @brief One plane of a YCbCr image as JPEG stores it: 8-bit samples, each covering
/// `x_step` x `y_step` pixels of the image (2 for subsampled chroma, else 1).
struct plane_view {
  std::uint8_t const* data = nullptr;
  std::size_t stride = 0;  ///< bytes from one row to the next
  int width = 0;           ///< samples per row
  int height = 0;          ///< rows
  int x_step = 1;
  int y_step = 1;
};

/// @brief A rectangle of pixels: [x, x + width) x [y, y + height).
struct pixel_rect {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
};

/// @brief The Y, Cb and Cr planes of an image of `width` x `height` pixels, of which the pixels
/// `decoded` were decoded (in every plane, the samples covering them); the other samples hold
/// whatever the buffer held.
struct ycc_view {
  plane_view y;
  plane_view cb;
  plane_view cr;
  int width = 0;
  int height = 0;
  pixel_rect decoded;
};

/// @brief Whether `plane`'s samples [x0, x1) x [y0, y1) were all decoded: they lie inside the
/// samples covering the pixels `decoded`.
[[nodiscard]] bool samples_decoded(plane_view const& plane, pixel_rect const& decoded, int x0,
                                   int y0, int x1, int y1) noexcept;

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

/// @brief For tests: makes every thread use the plain C++ kernels (true) or the fastest this
/// CPU has (false, the default), to check that both give the same pixels. @return whether the
/// fastest were in use before.
bool use_portable_resize(bool portable) noexcept;

/// @brief Whether `area` is whole pixels of exactly `out_width` x `out_height`: a copy, with no
/// resampling (resize_rgbx_to_rgb copies such crops).
[[nodiscard]] bool is_copy(crop_area const& area, int out_width, int out_height) noexcept;

/// @brief Whether copy_ycc_to_rgb converts `source`: chroma subsampled 2 x 2 (4:2:0), 2 x 1
/// (4:2:2) or not at all, more than two samples wide where subsampled across.
[[nodiscard]] bool ycc_copy_supported(ycc_view const& source) noexcept;

/// @brief The `out_width` x `out_height` pixels of `source` from (`x`, `y`) on, as RGB (HWC) in
/// `out`, mirrored left-right when `mirror`: exactly the pixels libjpeg's own decode to RGB gives
/// (jdsample.c's "fancy" upsampling of the chroma: a triangle filter with its rounding biases,
/// the image's edges repeated; jdcolor.c's integer YCbCr -> RGB), for JPEGs libjpeg upsamples so
/// (do_fancy_upsampling, the default, at every DCT scale but 1/8). Where no resampling is asked
/// this is the planar path's whole work: one pass per output row, no intermediate image. The
/// planes must hold the samples the area covers and, for subsampled chroma, the chroma
/// samples beside the area (the upsampling's context; planes_read says which pixels). AVX2
/// where the CPU has it, the same integers in plain C++ elsewhere. @throws logic_error for an
/// area outside the image or reading samples outside those decoded.
void copy_ycc_to_rgb(ycc_view const& source, int x, int y, std::span<std::uint8_t> out,
                     int out_width, int out_height, bool mirror);

/// @brief For image_ycc_copy.cpp: RGBX pixels -> RGB bytes, mirrored if asked, with the kernels
/// in use.
void rgbx_row_to_rgb(std::uint8_t const* rgbx, int width, bool mirror, std::uint8_t* rgb) noexcept;
/// @brief Whether the resampler's AVX2 kernels are in use (the CPU has AVX2 and
/// use_portable_resize(true) is not in force): the one choice every image kernel follows.
[[nodiscard]] bool avx2_kernels_in_use() noexcept;

/// @brief As resize_rgbx_to_rgb, from the planes of a YCbCr image: each plane is resampled at
/// its own resolution (the chroma planes from their subsampled samples, positioned as JPEG
/// centres them), then converted to RGB (BT.601 full range, as JPEG's) at the output size.
/// `area` is in the image's pixels. The chroma then differs from that of a full-size RGB decode
/// resampled the same way by how libjpeg's upsampling interpolates it: a grey level or two on
/// average, more at sharp colour edges (tests/image_planar_test.cpp measures it). A copy (see
/// is_copy) of planes ycc_copy_supported takes is copy_ycc_to_rgb: libjpeg's own pixels.
/// @throws logic_error for an area outside the image or one that reads samples outside those
/// decoded.
void resize_ycc_to_rgb(ycc_view const& source, crop_area const& area, std::span<std::uint8_t> out,
                       int out_width, int out_height, bool mirror);

/// @brief How many pixels a chroma sample covers across and down: 2 where the chroma is
/// subsampled (and decoded so), else 1.
struct chroma_steps {
  int x = 1;
  int y = 1;
};

/// @brief The samples [first, second) of a plane's axis of `size` samples, each covering `step`
/// pixels (1 or 2), that copy_ycc_to_rgb reads for the pixels [from, to): each pixel its own
/// sample and, where subsampled, the neighbour on its side (libjpeg's fancy upsampling: the one
/// before for an even pixel, after for an odd one; none beyond the plane's edges).
[[nodiscard]] std::pair<int, int> copy_samples_read(int from, int to, int step, int size) noexcept;

/// @brief The pixels whose plane samples resize_ycc_to_rgb reads for `area` to `out_width` x
/// `out_height`, of planes whose chroma is sampled as `chroma` says: the whole pixels `area`
/// touches, and for a copy, along a subsampled axis, the pixels of the chroma samples beside them
/// (copy_samples_read: the upsampling's context, one or two pixels more on a side); what
/// decode_planes must decode. Not clamped to the image.
[[nodiscard]] pixel_rect planes_read(crop_area const& area, int out_width, int out_height,
                                     chroma_steps chroma) noexcept;

}  // namespace gpufeed::detail
