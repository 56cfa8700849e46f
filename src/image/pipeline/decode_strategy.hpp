#pragma once
/// @file
/// @brief Which decode shortcuts the image pipeline takes for a JPEG (internal): all of them
/// unless `image_options::full_decoding`, one at a time where a test or benchmark compares them.

#include <optional>

#include "gpufeed/datasets/image_options.hpp"

namespace gpufeed::detail {

/// @brief The decode shortcuts of one image pipeline, fixed at its construction.
struct decode_strategy {
  /// Decode a JPEG at 1/2, 1/4 or 1/8 size (libjpeg's DCT scaling) when the crop is that much
  /// larger than the output (jpeg_reduction): much faster, and nearly the same pixels.
  bool reduced = true;
  /// Decode (inverse DCT, upsampling, colour conversion) only the rows and columns of a JPEG
  /// that the crop needs; the pixels inside the crop are those of a whole decode.
  bool cropped = true;
  /// Where the crop is resampled anyway, decode a YCbCr JPEG to its planes (no upsampling or
  /// colour conversion in libjpeg), resample each at its own resolution and convert to RGB at the
  /// output size: faster, with chroma that differs from a full RGB decode's by under a grey
  /// level on average (more at sharp colour edges). A baseline JPEG's planes are decoded only in
  /// the blocks under the crop, whatever its size (built with libjpeg-turbo 2.1 or later); a
  /// progressive JPEG's whole, so only crops covering planar_min_share of it or more (any part
  /// without `cropped`) take this path, the smaller ones `cropped`'s. A crop that is a plain
  /// copy (the output's size, whole pixels) is decoded to its planes too and converted with
  /// libjpeg's own upsampling and colour arithmetic: the same pixels as the RGB decode, with less
  /// work.
  bool planar = true;

  friend bool operator==(decode_strategy const&, decode_strategy const&) = default;
};

/// @brief The strategy of an image pipeline constructed now, on this thread, with `options`: the
/// one a live scoped_decode_strategy of this thread sets, else every shortcut off where
/// `options.full_decoding`, else every one on.
[[nodiscard]] decode_strategy decode_strategy_for(image_options const& options) noexcept;

/// @brief While it lives, the image pipelines constructed on this thread (those inside
/// `image_folder` and `file_list` included) take `strategy`, whatever their options'
/// `full_decoding`; each keeps the strategy it was constructed with. For the tests and
/// benchmarks that turn one shortcut on or off at a time. Nests: the destructor puts back the
/// strategy in force before.
class scoped_decode_strategy {
 public:
  explicit scoped_decode_strategy(decode_strategy strategy) noexcept;
  ~scoped_decode_strategy();
  scoped_decode_strategy(scoped_decode_strategy const&) = delete;
  scoped_decode_strategy& operator=(scoped_decode_strategy const&) = delete;
  scoped_decode_strategy(scoped_decode_strategy&&) = delete;
  scoped_decode_strategy& operator=(scoped_decode_strategy&&) = delete;

 private:
  std::optional<decode_strategy> previous_;
};

/// @brief The DCT scaling of a JPEG decode for a crop of `crop_width` x `crop_height` source
/// pixels: the reduction (8, 4 or 2) that leaves the crop at least the output's size, the largest
/// such, else 1 (always 1 without `strategy.reduced`).
///
/// Only 1/2, 1/4 and 1/8: libjpeg-turbo's other M/8 scales (3/8, 5/8, 6/8, 7/8) would decode
/// fewer pixels still, but their inverse DCTs (and the 12x12 or 10x10 ones of subsampled chroma
/// there) have no SIMD code. Tried on 400-500 px photograph-like JPEGs to 224 px with
/// `gpufeed-bench decode` (docs/benchmarks/decode), a 6/8 or 5/8 decode of half the
/// pixels took about 30 % longer than the 8/8 decode of all of them.
[[nodiscard]] int jpeg_reduction(image_options const& options, decode_strategy const& strategy,
                                 double crop_width, double crop_height) noexcept;

/// @brief The share of the (DCT-scaled) image a crop must cover for the planar decode
/// (`decode_strategy::planar`) of a JPEG whose planes are decoded whole (progressive, or
/// built without libjpeg-turbo's internal header: not jpeg_reader::decodes_planes_in_part());
/// smaller crops of those are decoded cropped, to RGB. Baseline JPEGs take the planar path
/// whatever the share: decoding only the iMCUs under the crop, RandomResizedCrop to 224 gives
/// 2.5-9 % more images/s than with this threshold, to 112 0.997-1.035 (`gpufeed-bench decode`).
/// For planes decoded whole, on 400-500 px JPEGs to 224 px: at the 64 % of Resize(256) +
/// CenterCrop(224) the planar path costs about 12 % less CPU per image (all rows and columns,
/// but no chroma upsampling or colour conversion at full size, and a cheaper resize); below
/// 50 % no difference is measurable.
inline constexpr double planar_min_share = 0.5;

}  // namespace gpufeed::detail
