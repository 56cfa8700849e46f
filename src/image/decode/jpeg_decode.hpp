#pragma once
/// @file
/// @brief JPEG decoding with libjpeg where every problem libjpeg reports is an error, of only the
/// rows and columns a crop needs, at a reduced size where the output allows (internal).
///
/// cv::imdecode lets libjpeg decode damaged entropy-coded data with only a warning on stderr,
/// which yields a garbled picture; this decoder turns libjpeg's warnings into errors as well.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpufeed/error.hpp"
#include "image/resample/image_resize.hpp"

namespace gpufeed::detail {

/// @brief Whether `bytes` start as a JPEG does (SOI, then another marker: FF D8 FF): the test
/// OpenCV uses to pick its JPEG codec, so that the same files take the same decoder as before.
[[nodiscard]] bool looks_like_jpeg(std::span<unsigned char const> bytes) noexcept;

/// @brief Whether `bytes` start with the PNG signature (89 50 4E 47 0D 0A 1A 0A).
[[nodiscard]] bool looks_like_png(std::span<unsigned char const> bytes) noexcept;

/// @brief Whether this build decodes the planes of a baseline JPEG in part (libjpeg-turbo's
/// internal header was found): jpeg_reader::decode_planes then transforms only the iMCUs under
/// the rectangle it is given.
[[nodiscard]] bool partial_planes_built() noexcept;

/// @brief One JPEG being decoded: its header is read at construction; `decode` writes RGBX
/// pixels (colour and grey as `cv::imdecode` with `IMREAD_COLOR | IMREAD_IGNORE_ORIENTATION`
/// makes them, in RGB order; CMYK and YCCK converted) of the rows and columns asked for, at
/// 1/`reduction` of the image's size (libjpeg's DCT scaling).
///
/// Only the rows and columns that cover the rectangle asked for go through the inverse DCT,
/// upsampling and colour conversion (libjpeg-turbo's `jpeg_crop_scanline` and
/// `jpeg_skip_scanlines`); the entropy-coded data of the whole image is still read, so damage
/// anywhere in it is reported whatever the rectangle, unless set_read_to_end(false) lets it stop
/// after the last row needed. Inside the rectangle the pixels are those of a decode of the whole
/// image. Not thread-safe; one per image.
class jpeg_reader {
 public:
  /// @brief Reads the header of the JPEG `bytes` (which must outlive the reader).
  /// @throws file_error naming `name` for any error or warning libjpeg reports ("corrupt JPEG:"
  /// and libjpeg's message).
  jpeg_reader(std::span<unsigned char const> bytes, std::string name);
  ~jpeg_reader();
  jpeg_reader(jpeg_reader const&) = delete;
  jpeg_reader& operator=(jpeg_reader const&) = delete;
  jpeg_reader(jpeg_reader&&) = delete;
  jpeg_reader& operator=(jpeg_reader&&) = delete;

  /// @brief Whether an end-of-image marker (FF D9) follows the start of the first scan. libjpeg
  /// only warns about a missing one and pads the rest of the image with grey, after decoding
  /// the rows that are there; this tells such a truncated file before any row is decoded.
  [[nodiscard]] bool complete() const noexcept;

  /// @brief Whether decode and decode_planes read the entropy-coded data on to the end of the
  /// image after the rows they need (true, the default: damage anywhere is an error) or stop
  /// there (false: damage and truncation further down go unnoticed; the rows decoded are the
  /// same). A progressive JPEG is read whole by libjpeg before any row either way.
  void set_read_to_end(bool read_to_end) noexcept;

  /// @brief The image's size as its frame header states it.
  [[nodiscard]] int width() const noexcept;
  [[nodiscard]] int height() const noexcept;

  /// @brief Decodes at 1/`reduction` of the size (1, 2, 4 or 8): the decoded image is
  /// ceil(width / reduction) x ceil(height / reduction). @throws logic_error for another value.
  void set_reduction(int reduction);
  /// @brief The decoded image's size at the reduction set (the full size before any).
  [[nodiscard]] int decoded_width() const noexcept;
  [[nodiscard]] int decoded_height() const noexcept;

  /// @brief Decodes the rows and columns covering `want` (decoded pixels, clamped to the
  /// decoded image) into `buffer`; the result may start left of `want` (libjpeg crops on block
  /// boundaries) and is positioned by its `x` and `y`. Call once.
  /// A decoded size over OPENCV_IO_MAX_IMAGE_PIXELS (default 2^30) pixels is refused, as OpenCV
  /// refuses it, so that a forged header cannot ask for gigabytes.
  /// @throws file_error naming the image for any error or warning libjpeg reports, and for an
  /// image too large.
  [[nodiscard]] rgbx_view decode(pixel_rect want, rgbx_buffer& buffer);

  /// @brief Whether decode_planes can decode this JPEG: three components in YCbCr, the chroma
  /// subsampled by 1 or 2 in each direction (4:4:4, 4:2:2, 4:4:0, 4:2:0), 8 bits.
  [[nodiscard]] bool planar() const noexcept;
  /// @brief Decodes the image, at the reduction set, to its Y, Cb and Cr planes as the file
  /// stores them (no upsampling, no colour conversion) into `buffer`, laid out as the whole
  /// image's planes: at least the samples covering `want` (decoded pixels, clamped to the
  /// decoded image), in whole iMCUs (16 x 16 pixels for 4:2:0 at full size); the view's
  /// `decoded` says which. The other samples are left as `buffer` held them.
  ///
  /// A baseline JPEG (one interleaved scan, Huffman-coded; nearly all) is transformed only in
  /// the iMCU rows and columns covering `want`: the rows above and, with set_read_to_end (the
  /// default), below are entropy-decoded only, which still reports damage there. Other JPEGs,
  /// or a build without libjpeg-turbo 2.1's internal header (partial_planes_built), are decoded in
  /// every column from the first row down to `want`'s last (to the end with set_read_to_end). Call
  /// once, instead of decode, and only when planar().
  /// @throws file_error as decode does.
  [[nodiscard]] ycc_view decode_planes(std::vector<std::uint8_t>& buffer, pixel_rect want);
  /// @brief Whether decode_planes transforms only the iMCUs under its `want` in this JPEG: a
  /// planar() baseline JPEG, where partial_planes_built().
  [[nodiscard]] bool decodes_planes_in_part() const noexcept;
  /// @brief Whether copy_ycc_to_rgb turns this JPEG's planes, at the reduction set, into exactly
  /// the pixels decode gives: planar(), a chroma sampling copy_ycc_to_rgb takes, and libjpeg's
  /// interpolating upsampling in use (every reduction but 8, for subsampled chroma).
  [[nodiscard]] bool planes_copy_exactly() const noexcept;
  /// @brief How many pixels each chroma sample of decode_planes' planes covers at the reduction
  /// set (libjpeg may enlarge subsampled chroma in its scaled inverse DCT instead of leaving it
  /// subsampled). Only for a planar() JPEG.
  [[nodiscard]] chroma_steps planes_chroma_steps() const noexcept;

 private:
  // libjpeg's message as the error to throw.
  [[nodiscard]] file_error corrupt() const;
  // @throws file_error if the decoded size is empty or over OpenCV's pixel limit.
  void check_decoded_size() const;

  struct state;
  std::unique_ptr<state> state_;
  std::string name_;
};

}  // namespace gpufeed::detail
