// jpeg_reader::decode_planes: a YCbCr JPEG to its planes as stored (libjpeg's raw-data
// interface), of a baseline JPEG only the iMCUs under the crop (through libjpeg-turbo's internal
// header), and what the pipeline asks before choosing that path.

#include "image/decode/jpeg_decode.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "image/decode/jpeg_reader_state.hpp"

namespace gpufeed::detail {

namespace {

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

// start_raw and read_raw, like every function of jpeg_reader's files that calls into libjpeg
// (jpeg_reader_state.hpp), set the jump point themselves and return false after one.

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

}  // namespace

bool partial_planes_built() noexcept {
#if defined(GPUFEED_JPEG_PARTIAL_RAW)
  return true;
#else
  return false;
#endif
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
