// Named image_*.cpp so that src/CMakeLists.txt's glob of the image datasets' sources builds it.
#include "gpufeed/detail/image_resize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "gpufeed/error.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace gpufeed::detail {

namespace {

// Pixel values travel between the passes as int16 with 7 fraction bits (Q7: 255 -> 32640);
// weights are Q15. One step of a pass is x * w rounded back to Q7, SSSE3's pmulhrsw:
// (x * w + 2^14) >> 15, exact in 32 bits. The weights of an output sum to 2^15, so sums stay
// within int16 and the rounding error of a pass is below 1/32 of a grey level.
constexpr int q7_bits = 7;
constexpr int weight_bits = 15;
constexpr int weight_one = 1 << weight_bits;
constexpr std::int16_t weight_max = 32767;  // 1.0 itself is a copy (see filter_rows)
// Padding after each RGBX row (the decoder's buffers keep a spare row as well).
constexpr std::size_t row_padding = 16;

// The filter taps of one axis: for output i, `taps` weights (zeros included) applied to the
// inputs first[i], first[i] + 1, ... of the window.
struct axis_taps {
  int taps = 0;
  std::vector<int> first;
  std::vector<std::int16_t> weights;
  std::vector<double> scratch;
  // What they were made for: the same geometry (every image of one size through a centre crop)
  // reuses them.
  double start = -1;
  double length = 0;
  int window = 0;
  int outputs = 0;
};

// PIL's BILINEAR resampling (torchvision's antialias=True): output i samples the window at
// `start + (i + 0.5) * scale` with a triangle of half-width max(scale, 1), over the inputs it
// reaches, normalised; `window` inputs exist.
void make_taps(axis_taps& a, double start, double length, int window, int outputs) {
  if (a.start == start && a.length == length && a.window == window && a.outputs == outputs) return;
  double const scale = length / outputs;
  double const support = std::max(scale, 1.0);
  auto const& center_of = [&](int i) { return start + (i + 0.5) * scale; };
  auto const& lo_of = [&](double c) {
    return std::clamp(static_cast<int>(std::floor(c - support + 0.5)), 0, window - 1);
  };
  auto const& hi_of = [&](double c, int lo) {
    return std::clamp(static_cast<int>(std::floor(c + support + 0.5)), lo + 1, window);
  };
  int widest = 1;
  for (int i = 0; i < outputs; ++i) {
    double const c = center_of(i);
    int const lo = lo_of(c);
    widest = std::max(widest, hi_of(c, lo) - lo);
  }
  a.taps = widest;
  a.first.assign(static_cast<std::size_t>(outputs), 0);
  a.weights.assign(static_cast<std::size_t>(outputs) * static_cast<std::size_t>(a.taps), 0);
  a.scratch.resize(static_cast<std::size_t>(widest));
  for (int i = 0; i < outputs; ++i) {
    double const c = center_of(i);
    int const lo = lo_of(c);
    int const hi = hi_of(c, lo);
    double sum = 0;
    for (int x = lo; x < hi; ++x) {
      double const w = std::max(0.0, 1.0 - std::abs((x + 0.5 - c) / support));
      a.scratch[static_cast<std::size_t>(x - lo)] = w;
      sum += w;
    }
    if (sum <= 0) {  // a sample point between pixels the triangle misses: the nearest one
      std::fill(a.scratch.begin(), a.scratch.end(), 0.0);
      a.scratch[0] = 1;
      sum = 1;
    }
    // Start early enough that all `taps` inputs exist.
    int const first = std::max(0, std::min(lo, window - a.taps));
    a.first[static_cast<std::size_t>(i)] = first;
    std::int16_t* w =
        a.weights.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(a.taps);
    int total = 0;
    int largest = lo - first;
    for (int x = lo; x < hi; ++x) {
      auto const q = static_cast<int>(
          std::lround(a.scratch[static_cast<std::size_t>(x - lo)] / sum * weight_one));
      w[x - first] = static_cast<std::int16_t>(std::min(q, int{weight_max}));
      total += q;
      if (q > w[largest]) largest = x - first;
    }
    // Sums to one (2^15); a lone weight of one stays at weight_max and is copied instead.
    w[largest] =
        static_cast<std::int16_t>(std::clamp(w[largest] + weight_one - total, 0, int{weight_max}));
  }
  a.start = start;
  a.length = length;
  a.window = window;
  a.outputs = outputs;
}

std::int16_t step(std::int16_t x, std::int16_t w) noexcept {  // pmulhrsw
  return static_cast<std::int16_t>((x * w + (1 << 14)) >> 15);
}

// One output row of a filter pass down the rows: values [from, count) of `out`, the weighted
// sum of the same values of `rows`.
void filter_row_portable(std::int16_t const* const* rows, std::int16_t const* w, int taps,
                         std::size_t from, std::size_t count, std::int16_t* out) noexcept {
  for (std::size_t i = from; i < count; ++i) {
    std::int16_t acc = 0;
    for (int k = 0; k < taps; ++k) acc = static_cast<std::int16_t>(acc + step(rows[k][i], w[k]));
    out[i] = acc;
  }
}

// u8 -> Q7, [from, count).
void widen_portable(std::uint8_t const* in, std::size_t from, std::size_t count,
                    std::int16_t* out) noexcept {
  for (std::size_t i = from; i < count; ++i) {
    out[i] = static_cast<std::int16_t>(in[i] << q7_bits);
  }
}

std::uint8_t narrow(std::int16_t q7) noexcept {
  return static_cast<std::uint8_t>(std::clamp((q7 + (1 << (q7_bits - 1))) >> q7_bits, 0, 255));
}

// Q7 RGBX pixels -> RGB bytes, [from, pixels).
void narrow_portable(std::int16_t const* in, std::size_t from, std::size_t pixels,
                     std::uint8_t* out) noexcept {
  for (std::size_t p = from; p < pixels; ++p) {
    out[3 * p] = narrow(in[4 * p]);
    out[3 * p + 1] = narrow(in[4 * p + 1]);
    out[3 * p + 2] = narrow(in[4 * p + 2]);
  }
}

// out[c][r] = in[r][c] for RGBX pixels of four int16 (8 bytes), rows [r0, rows) and columns
// [c0, cols) (the rest is done); with `mirror`, the output columns come from the input rows in
// reverse (out[c][r] = in[rows - 1 - r][c]).
void transpose_portable(std::int16_t const* in, std::size_t in_stride, int rows, int cols, int r0,
                        int c0, bool mirror, std::int16_t* out, std::size_t out_stride) noexcept {
  auto const copy = [&](int r, int c) {
    std::int16_t const* src = in + static_cast<std::size_t>(mirror ? rows - 1 - r : r) * in_stride;
    std::memcpy(out + static_cast<std::size_t>(c) * out_stride + 4 * static_cast<std::size_t>(r),
                src + 4 * static_cast<std::size_t>(c), 4 * sizeof(std::int16_t));
  };
  for (int r = r0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) copy(r, c);
  }
  for (int r = 0; r < r0; ++r) {
    for (int c = c0; c < cols; ++c) copy(r, c);
  }
}

struct kernels {
  void (*filter_row)(std::int16_t const* const*, std::int16_t const*, int, std::size_t,
                     std::int16_t*) noexcept;
  void (*widen)(std::uint8_t const*, std::size_t, std::int16_t*) noexcept;
  void (*narrow_rgb)(std::int16_t const*, std::size_t, std::uint8_t*) noexcept;
  void (*transpose)(std::int16_t const*, std::size_t, int, int, bool, std::int16_t*,
                    std::size_t) noexcept;
};

void filter_row_plain(std::int16_t const* const* rows, std::int16_t const* w, int taps,
                      std::size_t count, std::int16_t* out) noexcept {
  filter_row_portable(rows, w, taps, 0, count, out);
}
void widen_plain(std::uint8_t const* in, std::size_t count, std::int16_t* out) noexcept {
  widen_portable(in, 0, count, out);
}
void narrow_plain(std::int16_t const* in, std::size_t pixels, std::uint8_t* out) noexcept {
  narrow_portable(in, 0, pixels, out);
}
void transpose_plain(std::int16_t const* in, std::size_t in_stride, int rows, int cols, bool mirror,
                     std::int16_t* out, std::size_t out_stride) noexcept {
  transpose_portable(in, in_stride, rows, cols, 0, 0, mirror, out, out_stride);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define GPUFEED_RESIZE_AVX2 1
// The same arithmetic, 16 values at a time, for CPUs with AVX2 (chosen at run time). With the
// tap count fixed, the loop over taps unrolls and the weights and row pointers stay in
// registers; Taps = 0 takes the count at run time.
template <int Taps, std::size_t... K>
[[gnu::target("avx2")]] std::size_t filter_row_avx2_unrolled(std::int16_t const* const* rows,
                                                             std::int16_t const* w,
                                                             std::size_t count, std::int16_t* out,
                                                             std::index_sequence<K...>) noexcept {
  std::int16_t const* const row[] = {rows[K]...};
  __m256i const weight[] = {_mm256_set1_epi16(w[K])...};
  std::size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m256i acc = _mm256_setzero_si256();
    ((acc = _mm256_add_epi16(
          acc, _mm256_mulhrs_epi16(_mm256_loadu_si256(reinterpret_cast<__m256i const*>(row[K] + i)),
                                   weight[K]))),
     ...);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), acc);
  }
  return i;
}

template <int Taps>
std::size_t filter_row_avx2_fixed(std::int16_t const* const* rows, std::int16_t const* w,
                                  std::size_t count, std::int16_t* out) noexcept {
  return filter_row_avx2_unrolled<Taps>(rows, w, count, out,
                                        std::make_index_sequence<static_cast<std::size_t>(Taps)>{});
}

[[gnu::target("avx2")]] std::size_t filter_row_avx2_any(std::int16_t const* const* rows,
                                                        std::int16_t const* w, int taps,
                                                        std::size_t count,
                                                        std::int16_t* out) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m256i acc = _mm256_setzero_si256();
    for (int k = 0; k < taps; ++k) {
      acc = _mm256_add_epi16(
          acc,
          _mm256_mulhrs_epi16(_mm256_loadu_si256(reinterpret_cast<__m256i const*>(rows[k] + i)),
                              _mm256_set1_epi16(w[k])));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), acc);
  }
  return i;
}

void filter_row_avx2(std::int16_t const* const* rows, std::int16_t const* w, int taps,
                     std::size_t count, std::int16_t* out) noexcept {
  std::size_t done = 0;
  switch (taps) {
    case 2:
      done = filter_row_avx2_fixed<2>(rows, w, count, out);
      break;
    case 3:
      done = filter_row_avx2_fixed<3>(rows, w, count, out);
      break;
    case 4:
      done = filter_row_avx2_fixed<4>(rows, w, count, out);
      break;
    case 5:
      done = filter_row_avx2_fixed<5>(rows, w, count, out);
      break;
    case 6:
      done = filter_row_avx2_fixed<6>(rows, w, count, out);
      break;
    default:
      done = filter_row_avx2_any(rows, w, taps, count, out);
  }
  filter_row_portable(rows, w, taps, done, count, out);
}

[[gnu::target("avx2")]] void widen_avx2(std::uint8_t const* in, std::size_t count,
                                        std::int16_t* out) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m256i const wide =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<__m128i const*>(in + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_slli_epi16(wide, q7_bits));
  }
  widen_portable(in, i, count, out);
}

[[gnu::target("avx2")]] void narrow_avx2(std::int16_t const* in, std::size_t pixels,
                                         std::uint8_t* out) noexcept {
  __m256i const half = _mm256_set1_epi16(1 << (q7_bits - 1));
  // Per 128-bit lane: RGBX RGBX RGBX RGBX bytes -> RGB x 4 in the low 12 bytes.
  __m128i const pick = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  std::size_t p = 0;
  // 8 pixels (32 values) per round; each round's 16-byte stores reach 4 bytes past its 24, so
  // the last round that fits leaves 4 pixels to the plain loop.
  for (; p + 12 <= pixels; p += 8) {
    __m256i const a = _mm256_srai_epi16(
        _mm256_add_epi16(_mm256_loadu_si256(reinterpret_cast<__m256i const*>(in + 4 * p)), half),
        q7_bits);
    __m256i const b = _mm256_srai_epi16(
        _mm256_add_epi16(_mm256_loadu_si256(reinterpret_cast<__m256i const*>(in + 4 * p + 16)),
                         half),
        q7_bits);
    // packus works per lane: [a.lo b.lo a.hi b.hi]; the permute puts the pixels back in order.
    __m256i const bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(a, b), 0xD8);
    __m128i const first = _mm_shuffle_epi8(_mm256_castsi256_si128(bytes), pick);
    __m128i const second = _mm_shuffle_epi8(_mm256_extracti128_si256(bytes, 1), pick);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * p), first);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * p + 12), second);
  }
  narrow_portable(in, p, pixels, out);
}

// Blocks of 4 x 4 pixels (four int16 each: one 256-bit register holds four).
[[gnu::target("avx2")]] void transpose_avx2(std::int16_t const* in, std::size_t in_stride, int rows,
                                            int cols, bool mirror, std::int16_t* out,
                                            std::size_t out_stride) noexcept {
  int const full_rows = rows / 4 * 4;
  int const full_cols = cols / 4 * 4;
  auto const row_at = [&](int r) {
    return in + static_cast<std::size_t>(mirror ? rows - 1 - r : r) * in_stride;
  };
  for (int r = 0; r < full_rows; r += 4) {
    std::int16_t const* a = row_at(r);
    std::int16_t const* b = row_at(r + 1);
    std::int16_t const* c = row_at(r + 2);
    std::int16_t const* d = row_at(r + 3);
    for (int col = 0; col < full_cols; col += 4) {
      std::size_t const at = 4 * static_cast<std::size_t>(col);
      __m256i const ra = _mm256_loadu_si256(reinterpret_cast<__m256i const*>(a + at));
      __m256i const rb = _mm256_loadu_si256(reinterpret_cast<__m256i const*>(b + at));
      __m256i const rc = _mm256_loadu_si256(reinterpret_cast<__m256i const*>(c + at));
      __m256i const rd = _mm256_loadu_si256(reinterpret_cast<__m256i const*>(d + at));
      __m256i const ab_even = _mm256_unpacklo_epi64(ra, rb);  // a0 b0 | a2 b2
      __m256i const ab_odd = _mm256_unpackhi_epi64(ra, rb);   // a1 b1 | a3 b3
      __m256i const cd_even = _mm256_unpacklo_epi64(rc, rd);
      __m256i const cd_odd = _mm256_unpackhi_epi64(rc, rd);
      std::int16_t* o =
          out + static_cast<std::size_t>(col) * out_stride + 4 * static_cast<std::size_t>(r);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o),
                          _mm256_permute2x128_si256(ab_even, cd_even, 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + out_stride),
                          _mm256_permute2x128_si256(ab_odd, cd_odd, 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 2 * out_stride),
                          _mm256_permute2x128_si256(ab_even, cd_even, 0x31));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 3 * out_stride),
                          _mm256_permute2x128_si256(ab_odd, cd_odd, 0x31));
    }
  }
  transpose_portable(in, in_stride, rows, cols, full_rows, full_cols, mirror, out, out_stride);
}
#endif

kernels pick_kernels() noexcept {
#if defined(GPUFEED_RESIZE_AVX2)
  if (__builtin_cpu_supports("avx2")) {
    return {filter_row_avx2, widen_avx2, narrow_avx2, transpose_avx2};
  }
#endif
  return {filter_row_plain, widen_plain, narrow_plain, transpose_plain};
}

kernels const& active() noexcept {
  static kernels const chosen = pick_kernels();
  return chosen;
}

// Filters `in` (rows of `count` int16 values) down its rows: output row j is the weighted sum
// of input rows taps.first[j] .. + taps.taps - 1.
void filter_rows(std::int16_t const* in, std::size_t in_stride, std::size_t count,
                 axis_taps const& taps, int out_rows, std::int16_t* out, std::size_t out_stride) {
  thread_local std::vector<std::int16_t const*> rows;
  rows.resize(static_cast<std::size_t>(taps.taps));
  for (int j = 0; j < out_rows; ++j) {
    int const first = taps.first[static_cast<std::size_t>(j)];
    std::int16_t const* w =
        taps.weights.data() + static_cast<std::size_t>(j) * static_cast<std::size_t>(taps.taps);
    std::int16_t* const dst = out + static_cast<std::size_t>(j) * out_stride;
    int single = -1;  // the one tap with all the weight, if so: a copy
    for (int k = 0; k < taps.taps; ++k) {
      rows[static_cast<std::size_t>(k)] = in + static_cast<std::size_t>(first + k) * in_stride;
      if (w[k] == weight_max) single = k;
    }
    if (single >= 0) {
      std::memcpy(dst, rows[static_cast<std::size_t>(single)], count * sizeof(std::int16_t));
    } else {
      active().filter_row(rows.data(), w, taps.taps, count, dst);
    }
  }
}

// Per-thread int16 rows for the passes, grown as needed and reused.
class q7_rows {
 public:
  std::int16_t* reset(std::size_t count_per_row, int rows) {
    stride_ = count_per_row + 16;  // the filters may read a little past a row's end
    std::size_t const need = stride_ * static_cast<std::size_t>(rows);
    if (values_.size() < need) values_.resize(need);
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
  stride_ = 4 * static_cast<std::size_t>(width) + row_padding;
  std::size_t const bytes = stride_ * static_cast<std::size_t>(height);
  if (bytes_.size() < bytes) bytes_.resize(bytes);  // zeroed once; reused as is after
  return bytes_.data();
}

void resize_rgbx_to_rgb(rgbx_view const& source, crop_area const& area, std::span<std::uint8_t> out,
                        int out_width, int out_height, bool mirror) {
  GPUFEED_EXPECTS(out_width > 0 && out_height > 0 &&
                      out.size() == 3 * static_cast<std::size_t>(out_width) *
                                        static_cast<std::size_t>(out_height),
                  "resize_rgbx_to_rgb: the output has the wrong size");
  GPUFEED_EXPECTS(area.width > 0 && area.height > 0 && area.x >= 0 && area.y >= 0 &&
                      area.x + area.width <= source.width + 1e-6 &&
                      area.y + area.height <= source.height + 1e-6,
                  "resize_rgbx_to_rgb: the crop is not inside the image");
  // The whole pixels the area touches: the window the filters read from.
  int const x0 = std::min(static_cast<int>(std::floor(area.x)), source.width - 1);
  int const y0 = std::min(static_cast<int>(std::floor(area.y)), source.height - 1);
  int const x1 =
      std::clamp(static_cast<int>(std::ceil(area.x + area.width - 1e-9)), x0 + 1, source.width);
  int const y1 =
      std::clamp(static_cast<int>(std::ceil(area.y + area.height - 1e-9)), y0 + 1, source.height);
  int const cols = x1 - x0;
  int const rows = y1 - y0;

  thread_local axis_taps vertical;
  thread_local axis_taps horizontal;
  thread_local q7_rows widened;
  thread_local q7_rows down;
  thread_local q7_rows across;
  thread_local q7_rows filtered;
  make_taps(vertical, area.y - y0, area.height, rows, out_height);
  make_taps(horizontal, area.x - x0, area.width, cols, out_width);
  auto const& k = active();

  // The window's rows in Q7, only those the vertical filter reads.
  int const first_row = vertical.first.front();
  int const end_row = vertical.first.back() + vertical.taps;
  std::size_t const row_values = 4 * static_cast<std::size_t>(cols);
  std::int16_t* const wide = widened.reset(row_values, end_row - first_row);
  for (int r = first_row; r < end_row; ++r) {
    k.widen(source.data + static_cast<std::size_t>(y0 + r) * source.stride +
                4 * static_cast<std::size_t>(x0),
            row_values, wide + static_cast<std::size_t>(r - first_row) * widened.stride());
  }
  // Both passes filter down the rows, where SIMD takes whole rows at once: the rows first, then
  // the columns, turned into rows by a transpose, and back (mirrored when asked) at the end.
  std::int16_t* const d = down.reset(row_values, out_height);  // out_height x cols
  filter_rows(
      wide - static_cast<std::ptrdiff_t>(first_row) * static_cast<std::ptrdiff_t>(widened.stride()),
      widened.stride(), row_values, vertical, out_height, d, down.stride());
  std::size_t const column_values = 4 * static_cast<std::size_t>(out_height);
  std::int16_t* const a = across.reset(column_values, cols);  // cols x out_height
  k.transpose(d, down.stride(), out_height, cols, false, a, across.stride());
  std::int16_t* const f = filtered.reset(column_values, out_width);  // out_width x out_height
  filter_rows(a, across.stride(), column_values, horizontal, out_width, f, filtered.stride());
  std::size_t const out_values = 4 * static_cast<std::size_t>(out_width);
  std::int16_t* const upright = down.reset(out_values, out_height);  // out_height x out_width
  k.transpose(f, filtered.stride(), out_width, out_height, mirror, upright, down.stride());
  for (int r = 0; r < out_height; ++r) {
    k.narrow_rgb(
        upright + static_cast<std::size_t>(r) * down.stride(), static_cast<std::size_t>(out_width),
        out.data() + 3 * static_cast<std::size_t>(out_width) * static_cast<std::size_t>(r));
  }
}

}  // namespace gpufeed::detail
