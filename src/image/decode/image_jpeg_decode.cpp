#include "image/decode/jpeg_decode.hpp"

#include <jpeglib.h>
// libjpeg-turbo's internal header: what decode_planes needs to skip rows and columns in raw mode
// (partial_raw_decoding below), as the internal structs are laid out since 2.1 (the master's
// last_good_iMCU_row). Without it every column is decoded.
#if defined(LIBJPEG_TURBO_VERSION_NUMBER) && LIBJPEG_TURBO_VERSION_NUMBER >= 2001000 && \
    __has_include(<jpegint.h>)
#include <jpegint.h>
#define GPUFEED_JPEG_PARTIAL_RAW 1
#endif
#include <algorithm>
#include <array>
#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>  // jpeglib.h uses FILE and size_t without declaring them
#include <cstdlib>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpufeed/error.hpp"

namespace {

// libjpeg hands its callbacks only the jpeg_error_mgr; being the first member of a
// standard-layout struct, it leads them to the jump buffer and the message.
struct jpeg_failure {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};
static_assert(std::is_standard_layout_v<jpeg_failure>);

}  // namespace

// libjpeg is C: an exception must never unwind through its frames, so both callbacks leave it
// by longjmp to the setjmp of the function that called into it, which has nothing to destroy.
extern "C" {

static void gpufeed_jpeg_error_exit(j_common_ptr info) {
  auto* failure = reinterpret_cast<jpeg_failure*>(info->err);
  failure->mgr.format_message(info, failure->message);
  std::longjmp(failure->jump, 1);
}

// A warning (level < 0) is how libjpeg reports damaged scan data it decodes anyway into a
// garbled picture, so it fails like an error. Trace messages (level >= 0) are dropped.
static void gpufeed_jpeg_emit_message(j_common_ptr info, int level) {
  if (level < 0) gpufeed_jpeg_error_exit(info);
}

}  // extern "C"

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

// OpenCV's own cap on a decoded image, read from the same variable, so that the limit a user
// set for cv::imdecode still holds.
std::uint64_t max_pixels() {
  static std::uint64_t const limit = [] {
    std::uint64_t value = std::uint64_t{1} << 30U;
    char const* text = std::getenv("OPENCV_IO_MAX_IMAGE_PIXELS");  // NOLINT(concurrency-mt-unsafe)
    if (text != nullptr) {
      char* end = nullptr;
      unsigned long long const parsed = std::strtoull(text, &end, 10);
      if (end != text && *end == '\0' && parsed > 0) value = parsed;
    }
    return value;
  }();
  return limit;
}

}  // namespace

struct jpeg_reader::state {
  jpeg_decompress_struct info{};
  jpeg_failure failure{};
  bool complete = false;    // an end-of-image marker follows the first scan's start
  bool read_to_end = true;  // set_read_to_end

  state() noexcept {
    info.err = jpeg_std_error(&failure.mgr);
    failure.mgr.error_exit = gpufeed_jpeg_error_exit;
    failure.mgr.emit_message = gpufeed_jpeg_emit_message;
  }
  // Safe after a longjmp out of libjpeg, and before or after a failed jpeg_create_decompress
  // (it frees nothing while `info.mem` is null).
  ~state() { jpeg_destroy_decompress(&info); }
  state(state const&) = delete;
  state& operator=(state const&) = delete;
  state(state&&) = delete;
  state& operator=(state&&) = delete;
};

namespace {

using jpeg_state = jpeg_decompress_struct;

// The functions below are the only frames that call into libjpeg. Each sets the jump point
// itself and holds only trivially destructible locals, so the longjmp skips no destructor; they
// return false after one.

bool read_header(jpeg_state& info, jpeg_failure& failure,
                 std::span<unsigned char const> bytes) noexcept {
  if (setjmp(failure.jump) != 0) return false;
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, bytes.data(), static_cast<unsigned long>(bytes.size()));
  (void)jpeg_read_header(&info, TRUE);
  if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
    // libjpeg-turbo converts neither to RGB; it turns YCCK into CMYK, converted per row below.
    info.out_color_space = JCS_CMYK;
  } else {
#ifdef JCS_EXTENSIONS
    info.out_color_space = JCS_EXT_RGBX;  // what the resampler reads, with no extra pass
#else
    info.out_color_space = JCS_RGB;  // widened per row below
#endif
  }
  jpeg_calc_output_dimensions(&info);
  return true;
}

bool scale(jpeg_state& info, jpeg_failure& failure, int reduction) noexcept {
  if (setjmp(failure.jump) != 0) return false;
  info.scale_num = 1;
  info.scale_denom = static_cast<unsigned>(reduction);
  jpeg_calc_output_dimensions(&info);
  return true;
}

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

// The planes decode_planes fills: each padded to whole blocks, as libjpeg writes them.
struct plane_layout {
  std::array<std::size_t, 3> stride{};
  std::array<std::size_t, 3> offset{};
  std::array<int, 3> rows_per_call{};  // a component's rows in one iMCU row
  std::array<plane_view, 3> planes{};  // (data is null: the buffer is not there yet)
  std::size_t bytes = 0;
};

plane_layout layout_planes(jpeg_state const& info) {
  plane_layout layout;
  auto const imcu_rows =
      (info.output_height +
       static_cast<JDIMENSION>(info.max_v_samp_factor * info.min_DCT_scaled_size) - 1) /
      static_cast<JDIMENSION>(info.max_v_samp_factor * info.min_DCT_scaled_size);
  for (std::size_t c = 0; c < 3; ++c) {
    auto const& comp = info.comp_info[c];
    layout.rows_per_call[c] = comp.v_samp_factor * comp.DCT_scaled_size;
    layout.stride[c] =
        std::size_t{comp.width_in_blocks} * static_cast<std::size_t>(comp.DCT_scaled_size) + 32;
    layout.offset[c] = layout.bytes;
    layout.bytes +=
        layout.stride[c] * imcu_rows * static_cast<std::size_t>(layout.rows_per_call[c]);
    // Pixels per sample. With DCT scaling libjpeg may enlarge a chroma plane in its inverse DCT
    // (a larger DCT_scaled_size) instead of upsampling it: then its samples are as fine as the
    // image's pixels. (Read here: jpeg_finish_decompress frees comp_info.)
    layout.planes[c] = {nullptr,
                        layout.stride[c],
                        static_cast<int>(comp.downsampled_width),
                        static_cast<int>(comp.downsampled_height),
                        (info.max_h_samp_factor * info.min_DCT_scaled_size) /
                            (comp.h_samp_factor * comp.DCT_scaled_size),
                        (info.max_v_samp_factor * info.min_DCT_scaled_size) /
                            (comp.v_samp_factor * comp.DCT_scaled_size)};
  }
  return layout;
}

// Starts a raw decode: the planes as stored, no upsampling, no colour conversion.
bool start_raw(jpeg_state& info, jpeg_failure& failure) noexcept {
  if (setjmp(failure.jump) != 0) return false;
  info.raw_data_out = TRUE;
  (void)jpeg_start_decompress(&info);
  return true;
}

// The iMCU rows [first_row, end_row) and columns [first_col, end_col) a raw decode transforms.
struct imcu_window {
  JDIMENSION first_row = 0;
  JDIMENSION end_row = 0;
  JDIMENSION first_col = 0;
  JDIMENSION end_col = 0;
};

// Whether the JPEG is one interleaved, Huffman-coded scan (baseline and extended sequential
// JPEGs: nearly all), the only kind read_raw skips in. After jpeg_read_header.
bool one_interleaved_huffman_scan(jpeg_state const& info) noexcept {
  return info.progressive_mode == FALSE && info.arith_code == FALSE && info.comps_in_scan > 1 &&
         info.comps_in_scan == info.num_components;
}

// libjpeg's raw-data interface has no skip and no crop: jpeg_skip_scanlines and
// jpeg_crop_scanline refuse raw mode. Inside, they do two things that libjpeg-turbo's internal
// header exposes, and that work the same on the raw path of a single interleaved scan:
// jpeg_skip_scanlines skips an iMCU row by calling the entropy decoder's decode_mcu without an
// output (the MCU is decoded and checked, restart markers included, and not stored), and
// jpeg_crop_scanline sets the master's first and last iMCU column, outside which the single-pass
// coefficient controller does no inverse DCT (writing the first one at the output's column 0).
// A multi-scan (progressive) JPEG's coefficients are buffered and transformed elsewhere, and
// arithmetic decoding is left alone. Whether read_raw can skip so in this JPEG; after
// jpeg_start_decompress.
bool partial_raw_decoding(jpeg_state const& info) noexcept {
#if defined(GPUFEED_JPEG_PARTIAL_RAW)
  return one_interleaved_huffman_scan(info) &&
         // What jpeg_start_decompress set (master_selection): a layout of the internal structs
         // other than the header's fails this and decodes every column.
         info.master->first_iMCU_col == 0 && info.master->last_iMCU_col + 1 == info.MCUs_per_row;
#else
  (void)info;
  return false;
#endif
}

// Entropy-decodes `count` iMCU rows without keeping them, as jpeg_skip_scanlines does (jdapistd.c);
// only when partial_raw_decoding(), and only from read_raw, under its jump point. The interleaved
// scan's coefficient controller starts each iMCU row at its first MCU, where a complete row
// leaves it.
void skip_imcu_rows(jpeg_state& info, JDIMENSION count, JDIMENSION lines) {
#if defined(GPUFEED_JPEG_PARTIAL_RAW)
  for (JDIMENSION row = 0; row < count; ++row) {
    for (JDIMENSION mcu = 0; mcu < info.MCUs_per_row; ++mcu) {
      if (info.entropy->insufficient_data == FALSE) {
        info.master->last_good_iMCU_row = info.input_iMCU_row;
      }
      (void)(*info.entropy->decode_mcu)(&info, nullptr);
    }
    ++info.input_iMCU_row;
    ++info.output_iMCU_row;
    info.output_scanline += lines;
    if (info.input_iMCU_row == info.total_iMCU_rows) (*info.inputctl->finish_input_pass)(&info);
  }
#else
  (void)info, (void)count, (void)lines;
#endif
}

// Reads the iMCU rows and columns of `window` into `pixels` (laid out as `layout` says, the whole
// image's planes); the rows above the window are entropy-decoded only. Then, when `to_end`, reads
// the rows below it, entropy-decoded only, so that damage anywhere is reported; else stops.
// `partial`: partial_raw_decoding(); without it the window must start at row 0, span every
// column, and with `to_end` reach the last row.
bool read_raw(jpeg_state& info, jpeg_failure& failure, plane_layout const& layout,
              unsigned char* pixels, imcu_window const& window, bool partial,
              bool to_end) noexcept {
  if (setjmp(failure.jump) != 0) return false;
  constexpr int max_rows = 2 * DCTSIZE;  // v_samp_factor <= 2 (planar() checks)
  JSAMPROW rows[3][max_rows];
  JSAMPARRAY planes[3] = {rows[0], rows[1], rows[2]};
  auto const lines = static_cast<JDIMENSION>(info.max_v_samp_factor * info.min_DCT_scaled_size);
  // libjpeg writes the window's first column at the rows' start: each row begins that far left.
  std::array<std::size_t, 3> first_sample{};
  if (partial) {
#if defined(GPUFEED_JPEG_PARTIAL_RAW)
    info.master->first_iMCU_col = window.first_col;
    info.master->last_iMCU_col = window.end_col - 1;
#endif
    for (std::size_t c = 0; c < 3; ++c) {
      first_sample[c] = std::size_t{window.first_col} *
                        static_cast<std::size_t>(info.comp_info[c].MCU_sample_width);
    }
    skip_imcu_rows(info, window.first_row, lines);
  }
  for (JDIMENSION imcu = window.first_row; imcu < window.end_row; ++imcu) {
    for (std::size_t c = 0; c < 3; ++c) {
      auto const n = static_cast<std::size_t>(layout.rows_per_call[c]);
      for (std::size_t r = 0; r < n; ++r) {
        rows[c][r] =
            pixels + layout.offset[c] + (imcu * n + r) * layout.stride[c] + first_sample[c];
      }
    }
    if (jpeg_read_raw_data(&info, planes, lines) == 0) return false;
  }
  if (!to_end) {
    jpeg_abort_decompress(&info);
    return true;
  }
  if (partial) skip_imcu_rows(info, info.total_iMCU_rows - info.input_iMCU_row, lines);
  (void)jpeg_finish_decompress(&info);
  return true;
}

// Whether the bytes from the start of the first scan's entropy-coded data hold an end-of-image
// marker. There a 0xFF byte is always stuffed (FF 00) or a restart marker, so FF D9 is the end.
bool has_end_marker(unsigned char const* scan, std::size_t size) noexcept {
  if (size >= 2 && scan[size - 2] == 0xFF && scan[size - 1] == 0xD9) return true;  // the usual
  for (std::size_t i = 0; i + 1 < size; ++i) {
    if (scan[i] == 0xFF && scan[i + 1] == 0xD9) return true;
  }
  return false;
}

}  // namespace

bool partial_planes_built() noexcept {
#if defined(GPUFEED_JPEG_PARTIAL_RAW)
  return true;
#else
  return false;
#endif
}

bool looks_like_jpeg(std::span<unsigned char const> bytes) noexcept {
  return bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
}

bool looks_like_png(std::span<unsigned char const> bytes) noexcept {
  static constexpr unsigned char signature[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return bytes.size() >= sizeof signature &&
         std::equal(std::begin(signature), std::end(signature), bytes.begin());
}

jpeg_reader::jpeg_reader(std::span<unsigned char const> bytes, std::string name)
    : state_{std::make_unique<state>()}, name_{std::move(name)} {
  if (!read_header(state_->info, state_->failure, bytes)) {
    throw corrupt();
  }
  // The header is read up to the first scan: the memory source now points at its data.
  jpeg_source_mgr const& source = *state_->info.src;
  state_->complete = has_end_marker(source.next_input_byte, source.bytes_in_buffer);
}

bool jpeg_reader::complete() const noexcept {
  return state_->complete;
}

void jpeg_reader::set_read_to_end(bool read_to_end) noexcept {
  state_->read_to_end = read_to_end;
}

jpeg_reader::~jpeg_reader() = default;

file_error jpeg_reader::corrupt() const {
  return file_error(name_, std::string{"corrupt JPEG: "} + state_->failure.message);
}

void jpeg_reader::check_decoded_size() const {
  std::uint64_t const width = state_->info.output_width;
  std::uint64_t const height = state_->info.output_height;
  if (width * height > max_pixels()) {
    throw file_error(name_, "the JPEG's decoded size " + std::to_string(width) + "x" +
                                std::to_string(height) + " is over OPENCV_IO_MAX_IMAGE_PIXELS (" +
                                std::to_string(max_pixels()) + ")");
  }
  if (width == 0 || height == 0) throw file_error(name_, "the JPEG has no pixels");
}

int jpeg_reader::width() const noexcept {
  return static_cast<int>(state_->info.image_width);
}

int jpeg_reader::height() const noexcept {
  return static_cast<int>(state_->info.image_height);
}

int jpeg_reader::decoded_width() const noexcept {
  return static_cast<int>(state_->info.output_width);
}

int jpeg_reader::decoded_height() const noexcept {
  return static_cast<int>(state_->info.output_height);
}

void jpeg_reader::set_reduction(int reduction) {
  GPUFEED_EXPECTS(reduction == 1 || reduction == 2 || reduction == 4 || reduction == 8,
                  "jpeg_reader: reduction " + std::to_string(reduction) + " is not 1, 2, 4 or 8");
  if (!scale(state_->info, state_->failure, reduction)) {
    throw corrupt();
  }
}

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

bool jpeg_reader::planar() const noexcept {
  auto const& info = state_->info;
  if (info.jpeg_color_space != JCS_YCbCr || info.num_components != 3 || info.data_precision != 8 ||
      info.max_h_samp_factor > 2 || info.max_v_samp_factor > 2) {
    return false;
  }
  auto const& y = info.comp_info[0];
  return y.h_samp_factor == info.max_h_samp_factor && y.v_samp_factor == info.max_v_samp_factor &&
         info.comp_info[1].h_samp_factor == 1 && info.comp_info[1].v_samp_factor == 1 &&
         info.comp_info[2].h_samp_factor == 1 && info.comp_info[2].v_samp_factor == 1;
}

ycc_view jpeg_reader::decode_planes(std::vector<std::uint8_t>& buffer, pixel_rect want) {
  GPUFEED_EXPECTS(planar(), "jpeg_reader::decode_planes: not a YCbCr JPEG it can decode");
  auto& info = state_->info;
  check_decoded_size();
  auto const width = static_cast<int>(info.output_width);
  auto const height = static_cast<int>(info.output_height);
  if (!start_raw(info, state_->failure)) throw corrupt();
  plane_layout const layout = layout_planes(info);
  if (buffer.size() < layout.bytes) buffer.resize(layout.bytes);
  // `want` on the image, then in iMCUs (the pixels of an iMCU at this scale: ever a whole number).
  int const x0 = std::clamp(want.x, 0, width - 1);
  int const y0 = std::clamp(want.y, 0, height - 1);
  int const x1 = std::clamp(want.x + want.width, x0 + 1, width);
  int const y1 = std::clamp(want.y + want.height, y0 + 1, height);
  int const imcu_width = info.max_h_samp_factor * info.min_DCT_scaled_size;
  int const imcu_height = info.max_v_samp_factor * info.min_DCT_scaled_size;
  bool const partial = partial_raw_decoding(info);
  bool const to_end = state_->read_to_end;
  // Without `partial`: every column, from the top, and every row when reading to the end.
  imcu_window window{0, static_cast<JDIMENSION>((y1 + imcu_height - 1) / imcu_height), 0,
                     info.MCUs_per_row};
  if (partial) {
    window.first_row = static_cast<JDIMENSION>(y0 / imcu_height);
    window.first_col = static_cast<JDIMENSION>(x0 / imcu_width);
    window.end_col = static_cast<JDIMENSION>((x1 + imcu_width - 1) / imcu_width);
  } else if (to_end) {
    window.end_row = info.total_iMCU_rows;
  }
  if (!read_raw(info, state_->failure, layout, buffer.data(), window, partial, to_end)) {
    throw corrupt();
  }
  auto const edge = [](JDIMENSION imcus, int size, int limit) {
    return std::min(static_cast<int>(imcus) * size, limit);
  };
  pixel_rect decoded{edge(window.first_col, imcu_width, width),
                     edge(window.first_row, imcu_height, height), 0, 0};
  decoded.width = edge(window.end_col, imcu_width, width) - decoded.x;
  decoded.height = edge(window.end_row, imcu_height, height) - decoded.y;
  auto const plane = [&](std::size_t c) {
    plane_view view = layout.planes[c];
    view.data = buffer.data() + layout.offset[c];
    return view;
  };
  return {plane(0), plane(1), plane(2), width, height, decoded};
}

bool jpeg_reader::decodes_planes_in_part() const noexcept {
  return partial_planes_built() && planar() && one_interleaved_huffman_scan(state_->info);
}

chroma_steps jpeg_reader::planes_chroma_steps() const noexcept {
  // As decode_planes will lay the planes out: the same calculation.
  plane_layout const layout = layout_planes(state_->info);
  return {layout.planes[1].x_step, layout.planes[1].y_step};
}

bool jpeg_reader::planes_copy_exactly() const noexcept {
  if (!planar()) return false;
  auto const& info = state_->info;
  // The planes as the sizes set now lay them out (as decode_planes will: the same calculation).
  plane_layout const layout = layout_planes(info);
  auto const width = static_cast<int>(info.output_width);
  auto const height = static_cast<int>(info.output_height);
  ycc_view const planes{layout.planes[0], layout.planes[1],     layout.planes[2], width,
                        height,           {0, 0, width, height}};
  bool const subsampled = planes.cb.x_step > 1 || planes.cb.y_step > 1;
  // libjpeg interpolates subsampled chroma ("fancy" upsampling) except at 1/8 of the size,
  // where it repeats the samples.
  return ycc_copy_supported(planes) && (!subsampled || info.min_DCT_scaled_size > 1);
}

}  // namespace gpufeed::detail
