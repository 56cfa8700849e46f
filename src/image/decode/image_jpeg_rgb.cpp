// jpeg_reader::decode: the rows and columns a crop needs, to RGBX (libjpeg-turbo's
// jpeg_crop_scanline and jpeg_skip_scanlines), CMYK and plain RGB widened per row.

#include "image/decode/jpeg_decode.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "image/decode/jpeg_reader_state.hpp"

namespace gpufeed::detail {

namespace {

// Adobe's CMYK JPEGs (those with an APP14 "Adobe" marker, which is nearly all) store the inks
// inverted, 255 meaning no ink; the others store them plainly. The usual approximation without
// a colour profile: each channel is what its ink and the black leave of the paper.
void cmyk_row_to_rgbx(unsigned char const* cmyk, unsigned char* rgbx, std::size_t width,
                      bool inverted) noexcept {
  auto const paper = [inverted](unsigned char v) -> unsigned { return inverted ? v : 255U - v; };
  for (std::size_t i = 0; i < width; ++i, cmyk += 4, rgbx += 4) {
    unsigned const k = paper(cmyk[3]);
    rgbx[0] = static_cast<unsigned char>((paper(cmyk[0]) * k + 127U) / 255U);
    rgbx[1] = static_cast<unsigned char>((paper(cmyk[1]) * k + 127U) / 255U);
    rgbx[2] = static_cast<unsigned char>((paper(cmyk[2]) * k + 127U) / 255U);
    rgbx[3] = 255;
  }
}

// RGB (libjpeg without libjpeg-turbo's colour-space extensions) -> RGBX.
void rgb_row_to_rgbx(unsigned char const* rgb, unsigned char* rgbx, std::size_t width) noexcept {
  for (std::size_t i = 0; i < width; ++i, rgb += 3, rgbx += 4) {
    rgbx[0] = rgb[0];
    rgbx[1] = rgb[1];
    rgbx[2] = rgb[2];
    rgbx[3] = 255;
  }
}

// Like every function of jpeg_reader's files that calls into libjpeg (jpeg_reader_state.hpp),
// start and read_rows set the jump point themselves and return false after one.

// Where decode_rows writes: rows [first_row, end_row) of the decoded image, from column
// `x_offset` (libjpeg rounds it down to a block boundary and widens `width` to match).
struct row_request {
  JDIMENSION x_offset;
  JDIMENSION width;
  JDIMENSION first_row;
  JDIMENSION end_row;
};

bool start(jpeg_state& info, jpeg_failure& failure, row_request& request) noexcept {
  if (setjmp(failure.jump) != 0) return false;
  (void)jpeg_start_decompress(&info);
  if (request.x_offset > 0 || request.width < info.output_width) {
    jpeg_crop_scanline(&info, &request.x_offset, &request.width);
  }
  return true;
}

// Decodes the requested rows into `pixels` (rows of `stride` bytes, RGBX, and a spare one).
// `staging` holds one row of libjpeg's output when that is not RGBX already (CMYK; RGB without
// libjpeg-turbo), else null. Then, when `to_end`, reads the entropy-coded data to the end, so
// that damage anywhere is reported; else stops.
bool read_rows(jpeg_state& info, jpeg_failure& failure, row_request const& request,
               unsigned char* pixels, std::size_t stride, unsigned char* staging,
               bool to_end) noexcept {
  if (setjmp(failure.jump) != 0) return false;
  bool const cmyk = info.out_color_space == JCS_CMYK;
  std::size_t const width = info.output_width;
  if (request.first_row > 0) (void)jpeg_skip_scanlines(&info, request.first_row);
  while (info.output_scanline < request.end_row) {
    unsigned char* const dst = pixels + stride * (info.output_scanline - request.first_row);
    JSAMPROW row = staging != nullptr ? staging : dst;
    (void)jpeg_read_scanlines(&info, &row, 1);
    if (cmyk) {
      cmyk_row_to_rgbx(staging, dst, width, info.saw_Adobe_marker != FALSE);
    } else if (staging != nullptr) {
      rgb_row_to_rgbx(staging, dst, width);
    }
  }
  if (!to_end) {
    jpeg_abort_decompress(&info);
    return true;
  }
  // Skipped rows are only entropy-decoded (no inverse DCT, upsampling or colour conversion),
  // which reports damage below the rows asked for too. Not the last row: a skip to the end of
  // the image stops reading the data instead, so damage there would go unreported; it is read
  // into the spare row after the pixels.
  if (info.output_scanline + 1 < info.output_height) {
    (void)jpeg_skip_scanlines(&info, info.output_height - 1 - info.output_scanline);
  }
  unsigned char* const spare = pixels + stride * (request.end_row - request.first_row);
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = staging != nullptr ? staging : spare;
    (void)jpeg_read_scanlines(&info, &row, 1);
  }
  (void)jpeg_finish_decompress(&info);
  return true;
}

}  // namespace

rgbx_view jpeg_reader::decode(pixel_rect want, rgbx_buffer& buffer) {
  auto& info = state_->info;
  std::uint64_t const width = info.output_width;
  std::uint64_t const height = info.output_height;
  check_decoded_size();
  auto const clamp = [](int v, std::uint64_t limit) {
    return static_cast<JDIMENSION>(
        std::clamp<std::int64_t>(v, 0, static_cast<std::int64_t>(limit)));
  };
  // One column more on each side: libjpeg's upsampling treats the edges of a cropped decode as
  // the image's edges, which changes the chroma of the outermost columns.
  JDIMENSION const x0 = clamp(want.x - 1, width - 1);
  JDIMENSION const x1 = std::max(clamp(want.x + want.width + 1, width), x0 + 1);
  JDIMENSION const y0 = clamp(want.y, height - 1);
  JDIMENSION const y1 = std::max(clamp(want.y + want.height, height), y0 + 1);
  row_request request{x0, x1 - x0, y0, y1};
  if (!start(info, state_->failure, request)) throw corrupt();
  // libjpeg starts the crop on a block boundary at or left of x0 and keeps its end.
  std::uint8_t* const pixels =  // with a spare row after them (read_rows)
      buffer.reset(static_cast<int>(request.width), static_cast<int>(y1 - y0) + 1);
  thread_local std::vector<unsigned char> staging;  // per thread, reused
#ifdef JCS_EXTENSIONS
  bool const staged = info.out_color_space == JCS_CMYK;
#else
  bool const staged = true;
#endif
  if (staged && staging.size() < std::size_t{request.width} * 4U) {
    staging.resize(std::size_t{request.width} * 4U);
  }
  if (!read_rows(info, state_->failure, request, pixels, buffer.stride(),
                 staged ? staging.data() : nullptr, state_->read_to_end)) {
    throw corrupt();
  }
  return {pixels,
          buffer.stride(),
          static_cast<int>(request.width),
          static_cast<int>(y1 - y0),
          static_cast<int>(request.x_offset),
          static_cast<int>(y0)};
}

}  // namespace gpufeed::detail
