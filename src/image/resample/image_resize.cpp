#include "image/resample/image_resize.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpufeed/error.hpp"

#include "image_resample.hpp"

namespace gpufeed::detail {

using namespace resample;

namespace {

kernels const* const avx2_table = avx2_kernels();  // asked once: the CPU does not change
kernels const* const best_kernels = avx2_table != nullptr ? avx2_table : &portable_kernels();
std::atomic<kernels const*> chosen_kernels{best_kernels};

kernels const& active() noexcept {
  return *chosen_kernels.load(std::memory_order_relaxed);
}

// Filters `in` (rows of `count` int16 Q7 values, or of bytes) down its rows: output row j is the
// weighted sum of input rows taps.first[j] .. + taps.taps - 1, written turned in groups of
// `Group` values (4: RGBX pixels; 1: samples), as `out` says. Whole blocks of 16 values: the
// rows are padded for it (q7_rows; rgbx_buffer and decode_planes for bytes), and so are the
// turned outputs' rows.
template <int Group, class In>
void filter_rows(In const* in, std::size_t in_stride, std::size_t count, axis_taps const& taps,
                 int out_rows, pass_output out) {
  static_assert(Group == 1 || Group == 4);
  auto const& k = active();
  kernels::pass<In> pass = nullptr;
  if constexpr (std::is_same_v<In, std::uint8_t>) {
    pass = Group == 4 ? k.filter_pixel_bytes : k.filter_sample_bytes;
  } else {
    pass = Group == 4 ? k.filter_pixels : k.filter_samples;
  }
  pass(in, in_stride, round_up<std::size_t>(count, 16), taps, out_rows, out);
}

// Per-thread int16 rows for the passes, grown as needed and reused.
// Rows and values are padded (rows to a multiple of 8, values to a multiple of 16, and more),
// so that the kernels can work in whole blocks: what they compute in the padding is never read
// as a result.
class q7_rows {
 public:
  std::int16_t* reset(std::size_t count_per_row, int rows) {
    stride_ = round_up<std::size_t>(count_per_row, 16) + 16;
    std::size_t const need =
        stride_ * (round_up<std::size_t>(static_cast<std::size_t>(rows), 8) + 8);
    if (values_.size() < need) values_.resize(need);  // zeroed once; reused as is after
    return values_.data();
  }
  [[nodiscard]] std::size_t stride() const noexcept { return stride_; }

 private:
  std::vector<std::int16_t> values_;
  std::size_t stride_ = 0;
};

}  // namespace

std::uint8_t* rgbx_buffer::reset(int width, int height) {
  GPUFEED_EXPECTS(width > 0 && height > 0, "rgbx_buffer: empty image");
  stride_ = round_up(4 * static_cast<std::size_t>(width) + row_padding, row_alignment);
  std::size_t const bytes = stride_ * static_cast<std::size_t>(height) + row_alignment + row_offset;
  if (bytes_.size() < bytes) bytes_.resize(bytes);  // zeroed once; reused as is after
  auto const start = reinterpret_cast<std::uintptr_t>(bytes_.data());
  offset_ =
      static_cast<std::size_t>(round_up<std::uintptr_t>(start, row_alignment) - start) + row_offset;
  return bytes_.data() + offset_;
}

namespace {

// The whole samples that `area` (image pixels) touches in a plane of `width` x `height` samples,
// each covering `x_step` x `y_step` pixels (1 x 1: RGBX pixels, or full-resolution planes): the
// window the filters read from, and the area in the window's samples.
struct sample_window {
  int x0 = 0;
  int y0 = 0;
  int cols = 0;
  int rows = 0;
  crop_area area;
};

sample_window window_of(crop_area const& area, int width, int height, int x_step, int y_step) {
  double const ax = area.x / x_step;
  double const ay = area.y / y_step;
  double const aw = area.width / x_step;
  double const ah = area.height / y_step;
  sample_window w;
  w.x0 = std::clamp(static_cast<int>(std::floor(ax)), 0, width - 1);
  w.y0 = std::clamp(static_cast<int>(std::floor(ay)), 0, height - 1);
  w.cols = std::clamp(static_cast<int>(std::ceil(ax + aw - 1e-9)), w.x0 + 1, width) - w.x0;
  w.rows = std::clamp(static_cast<int>(std::ceil(ay + ah - 1e-9)), w.y0 + 1, height) - w.y0;
  // Within the window's samples (a subsampled plane's last one may cover the image's edge only
  // in part).
  double const x = ax - w.x0;
  double const y = ay - w.y0;
  w.area = {x, y, std::min(aw, w.cols - x), std::min(ah, w.rows - y)};
  return w;
}

// Both filter passes of one window, whose taps `vertical` and `horizontal` were made for it:
// samples of `Channels` bytes (4: RGBX pixels; 1: a plane), rows `stride` bytes apart from
// `data` (the window's first sample), resampled to `out_width` x `out_height` and mirrored
// left-right when `mirror`: `out_height` rows of `Channels` x `out_width` int16 (Q7) in `result`.
// Both passes filter down the rows, where SIMD takes whole rows at once: the rows first, then
// the columns, which the first pass's turned stores made rows, and the second pass's turn back.
// `turned` is scratch.
template <int Channels>
std::int16_t const* filter_window(std::uint8_t const* data, std::size_t stride,
                                  sample_window const& window, axis_taps const& vertical,
                                  axis_taps const& horizontal, int out_width, int out_height,
                                  bool mirror, q7_rows& turned, q7_rows& result) {
  static_assert(Channels == 1 || Channels == 4);
  std::size_t const row_values = Channels * static_cast<std::size_t>(window.cols);
  std::size_t const column_values = Channels * static_cast<std::size_t>(out_height);
  std::int16_t* const upright =
      result.reset(Channels * static_cast<std::size_t>(out_width), out_height);
  std::int16_t* const t = turned.reset(column_values, window.cols);  // cols x out_height
  filter_rows<Channels>(data, stride, row_values, vertical, out_height,
                        {t, turned.stride(), false});
  filter_rows<Channels>(t, turned.stride(), column_values, horizontal, out_width,
                        {upright, result.stride(), mirror});
  return upright;
}

// The window of `area` in a plane of `width` x `height` samples and the taps of both axes for it.
sample_window prepare(crop_area const& area, int width, int height, int x_step, int y_step,
                      int out_width, int out_height, axis_taps& vertical, axis_taps& horizontal) {
  sample_window const w = window_of(area, width, height, x_step, y_step);
  make_taps(vertical, w.area.y, w.area.height, w.rows, out_height);
  make_taps(horizontal, w.area.x, w.area.width, w.cols, out_width);
  return w;
}

void expect_geometry(int source_width, int source_height, crop_area const& area,
                     std::span<std::uint8_t> out, int out_width, int out_height, char const* what) {
  GPUFEED_EXPECTS(out_width > 0 && out_height > 0 &&
                      out.size() == 3 * static_cast<std::size_t>(out_width) *
                                        static_cast<std::size_t>(out_height),
                  std::string{what} + ": the output has the wrong size");
  GPUFEED_EXPECTS(area.width > 0 && area.height > 0 && area.x >= 0 && area.y >= 0 &&
                      area.x + area.width <= source_width + 1e-6 &&
                      area.y + area.height <= source_height + 1e-6,
                  std::string{what} + ": the crop is not inside the image");
}

}  // namespace

void resize_rgbx_to_rgb(rgbx_view const& source, crop_area const& area, std::span<std::uint8_t> out,
                        int out_width, int out_height, bool mirror) {
  expect_geometry(source.width, source.height, area, out, out_width, out_height,
                  "resize_rgbx_to_rgb");
  auto const& k = active();
  auto const row_out = [&](int r) {
    return out.data() + 3 * static_cast<std::size_t>(out_width) * static_cast<std::size_t>(r);
  };
  if (is_copy(area, out_width, out_height)) {  // nothing to filter: a copy
    auto const x0 = static_cast<std::size_t>(area.x);
    auto const y0 = static_cast<std::size_t>(area.y);
    for (int r = 0; r < out_height; ++r) {
      k.copy_row(source.data + (y0 + static_cast<std::size_t>(r)) * source.stride + 4 * x0,
                 out_width, mirror, row_out(r));
    }
    return;
  }
  thread_local axis_taps vertical, horizontal;
  thread_local q7_rows turned, upright;
  sample_window const w =
      prepare(area, source.width, source.height, 1, 1, out_width, out_height, vertical, horizontal);
  std::int16_t const* const rgbx = filter_window<4>(
      source.data + static_cast<std::size_t>(w.y0) * source.stride +
          4 * static_cast<std::size_t>(w.x0),
      source.stride, w, vertical, horizontal, out_width, out_height, mirror, turned, upright);
  for (int r = 0; r < out_height; ++r) {  // bytes in RGB order, a row at a time
    k.narrow_rgb(rgbx + static_cast<std::size_t>(r) * upright.stride(),
                 static_cast<std::size_t>(out_width), r + 1 < out_height, row_out(r));
  }
}

bool use_portable_resize(bool portable) noexcept {
  kernels const* const plain = &portable_kernels();
  return chosen_kernels.exchange(portable ? plain : best_kernels) != plain;
}

bool avx2_kernels_in_use() noexcept {
  return avx2_table != nullptr && &active() == avx2_table;
}

void rgbx_row_to_rgb(std::uint8_t const* rgbx, int width, bool mirror, std::uint8_t* rgb) noexcept {
  active().copy_row(rgbx, width, mirror, rgb);
}

bool samples_decoded(plane_view const& plane, pixel_rect const& decoded, int x0, int y0, int x1,
                     int y1) noexcept {
  int const end_col =
      std::min((decoded.x + decoded.width + plane.x_step - 1) / plane.x_step, plane.width);
  int const end_row =
      std::min((decoded.y + decoded.height + plane.y_step - 1) / plane.y_step, plane.height);
  return x0 >= decoded.x / plane.x_step && y0 >= decoded.y / plane.y_step && x1 <= end_col &&
         y1 <= end_row;
}

pixel_rect planes_read(crop_area const& area, int out_width, int out_height,
                       chroma_steps chroma) noexcept {
  int const x0 = floor_int(area.x);
  int const y0 = floor_int(area.y);
  int const x1 = static_cast<int>(std::ceil(area.x + area.width));
  int const y1 = static_cast<int>(std::ceil(area.y + area.height));
  if (!is_copy(area, out_width, out_height)) return {x0, y0, x1 - x0, y1 - y0};
  // The copy's chroma context, in pixels (never narrower than the area: a sample covers its
  // pixels); decode_planes clamps to the image, so no plane size here.
  constexpr int unbounded = std::numeric_limits<int>::max() / 2;
  auto const [first_col, end_col] = copy_samples_read(x0, x1, chroma.x, unbounded);
  auto const [first_row, end_row] = copy_samples_read(y0, y1, chroma.y, unbounded);
  return {first_col * chroma.x, first_row * chroma.y, (end_col - first_col) * chroma.x,
          (end_row - first_row) * chroma.y};
}

bool is_copy(crop_area const& area, int out_width, int out_height) noexcept {
  return area.x == std::floor(area.x) && area.y == std::floor(area.y) && area.width == out_width &&
         area.height == out_height;
}

void resize_ycc_to_rgb(ycc_view const& source, crop_area const& area, std::span<std::uint8_t> out,
                       int out_width, int out_height, bool mirror) {
  expect_geometry(source.width, source.height, area, out, out_width, out_height,
                  "resize_ycc_to_rgb");
  if (is_copy(area, out_width, out_height) && ycc_copy_supported(source)) {
    copy_ycc_to_rgb(source, static_cast<int>(area.x), static_cast<int>(area.y), out, out_width,
                    out_height, mirror);
    return;
  }
  // Per thread and reused. The chroma planes have the same geometry (planar() checks): one
  // window and one set of taps for both.
  thread_local axis_taps luma_v, luma_h, chroma_v, chroma_h;
  thread_local q7_rows turned, luma, blue, red;
  auto const start = [](plane_view const& p, sample_window const& w) {
    return p.data + static_cast<std::size_t>(w.y0) * p.stride + static_cast<std::size_t>(w.x0);
  };
  plane_view const& y_plane = source.y;
  sample_window const yw = prepare(area, y_plane.width, y_plane.height, y_plane.x_step,
                                   y_plane.y_step, out_width, out_height, luma_v, luma_h);
  sample_window const cw = prepare(area, source.cb.width, source.cb.height, source.cb.x_step,
                                   source.cb.y_step, out_width, out_height, chroma_v, chroma_h);
  auto const decoded = [&](plane_view const& p, sample_window const& w) {
    return samples_decoded(p, source.decoded, w.x0, w.y0, w.x0 + w.cols, w.y0 + w.rows);
  };
  GPUFEED_EXPECTS(decoded(y_plane, yw) && decoded(source.cb, cw),
                  "resize_ycc_to_rgb: the crop reads samples outside those decoded");
  std::int16_t const* const y =
      filter_window<1>(start(y_plane, yw), y_plane.stride, yw, luma_v, luma_h, out_width,
                       out_height, mirror, turned, luma);
  std::int16_t const* const cb =
      filter_window<1>(start(source.cb, cw), source.cb.stride, cw, chroma_v, chroma_h, out_width,
                       out_height, mirror, turned, blue);
  std::int16_t const* const cr =
      filter_window<1>(start(source.cr, cw), source.cr.stride, cw, chroma_v, chroma_h, out_width,
                       out_height, mirror, turned, red);
  // Colour, bytes and RGB order in one pass per row.
  auto const& k = active();
  std::size_t const row_values = static_cast<std::size_t>(out_width);
  for (int r = 0; r < out_height; ++r) {
    auto const at = static_cast<std::size_t>(r);
    k.ycc_to_rgb(y + at * luma.stride(), cb + at * blue.stride(), cr + at * red.stride(),
                 row_values, r + 1 < out_height, out.data() + 3 * row_values * at);
  }
}

}  // namespace gpufeed::detail
