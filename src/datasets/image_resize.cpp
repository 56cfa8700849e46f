// Named image_*.cpp so that src/CMakeLists.txt's glob of the image datasets' sources builds it.
#include "gpufeed/detail/image_resize.hpp"

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

#include "image_rgb_store.hpp"

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
// Where RGBX rows start: 8 bytes past a cache line, never on a 16-byte boundary. libjpeg-turbo's
// SIMD colour conversion, which writes the decoder's rows, stores a row that starts on a 16-byte
// (SSE2) or 32-byte (AVX2) boundary with non-temporal stores, past the cache: such rows cost a
// third more to decode and are read back from memory (gpufeed-bench decode).
constexpr std::size_t row_alignment = 64;
constexpr std::size_t row_offset = 8;

template <class T>
T round_up(T n, T m) noexcept {
  return (n + m - 1) / m * m;
}

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
// floor() without the library call that baseline x86-64 makes of std::floor.
int floor_int(double x) noexcept {
  auto const i = static_cast<int>(x);
  return i - (x < i ? 1 : 0);
}

void make_taps(axis_taps& a, double start, double length, int window, int outputs) {
  if (a.start == start && a.length == length && a.window == window && a.outputs == outputs) return;
  double const scale = length / outputs;
  double const support = std::max(scale, 1.0);
  double const inverse_support = 1.0 / support;
  auto const n = static_cast<std::size_t>(outputs);
  // Each output's inputs [lo, hi): the pixels whose centres the triangle reaches.
  a.first.resize(n);
  a.scratch.resize(2 * n);
  int widest = 1;
  for (std::size_t i = 0; i < n; ++i) {
    double const c = start + (static_cast<double>(i) + 0.5) * scale;
    int const lo = std::clamp(floor_int(c - support + 0.5), 0, window - 1);
    int const hi = std::clamp(floor_int(c + support + 0.5), lo + 1, window);
    a.scratch[2 * i] = lo;
    a.scratch[2 * i + 1] = hi;
    widest = std::max(widest, hi - lo);
  }
  a.taps = widest;
  a.weights.assign(n * static_cast<std::size_t>(a.taps), 0);
  std::array<double, 64> local{};
  std::vector<double> wide;  // only for a reduction by more than about 30
  double* const raw = widest <= static_cast<int>(local.size())
                          ? local.data()
                          : (wide.resize(static_cast<std::size_t>(widest)), wide.data());
  for (std::size_t i = 0; i < n; ++i) {
    double const c = start + (static_cast<double>(i) + 0.5) * scale;
    auto const lo = static_cast<int>(a.scratch[2 * i]);
    auto const hi = static_cast<int>(a.scratch[2 * i + 1]);
    double sum = 0;
    for (int x = lo; x < hi; ++x) {
      double const w = std::max(0.0, 1.0 - std::abs(x + 0.5 - c) * inverse_support);
      raw[x - lo] = w;
      sum += w;
    }
    if (sum <= 0) {  // a sample point between pixels the triangle misses: the nearest one
      std::fill(raw, raw + (hi - lo), 0.0);
      raw[0] = 1;
      sum = 1;
    }
    // Start early enough that all `taps` inputs exist.
    int const first = std::max(0, std::min(lo, window - a.taps));
    a.first[i] = first;
    std::int16_t* w = a.weights.data() + i * static_cast<std::size_t>(a.taps);
    double const to_fixed = weight_one / sum;
    int total = 0;
    int largest = lo - first;
    for (int x = lo; x < hi; ++x) {
      auto const q = static_cast<int>(raw[x - lo] * to_fixed + 0.5);
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

// A row value in Q7: int16 rows hold Q7 already; byte rows (the source's pixels or samples) are
// widened as they are read, so that the first pass needs no widened copy of the source.
std::int16_t q7(std::int16_t v) noexcept {
  return v;
}
std::int16_t q7(std::uint8_t v) noexcept {
  return static_cast<std::int16_t>(v << q7_bits);
}

// Where a filter pass writes its output row j: turned, in groups of `Group` values (4: RGBX
// pixels; 1: a plane's samples), group p of row j to row p at group column c(j), c(j) = j, or
// rows - 1 - j when mirrored. The transposes between the passes and after them, folded into
// the passes' stores.
struct pass_output {
  std::int16_t* data = nullptr;
  std::size_t stride = 0;
  bool mirror = false;
};

template <int Group>
std::int16_t* row_start(pass_output const& out, int j, int rows) noexcept {
  return out.data + Group * static_cast<std::size_t>(out.mirror ? rows - 1 - j : j);
}

// Value i of an output row that starts at `dst` (row_start).
template <int Group>
std::int16_t& value_at(std::int16_t* dst, std::size_t i, std::size_t stride) noexcept {
  return dst[i / Group * stride + i % Group];
}

// A filter pass down the rows: output row j is the weighted sum of input rows taps.first[j]
// .. + taps.taps - 1, `count` values each; rows of int16 (Q7) or of bytes; written turned.
template <class In, int Group>
void filter_pass_plain(In const* in, std::size_t in_stride, std::size_t count,
                       axis_taps const& taps, int out_rows, pass_output out) noexcept {
  auto const n = static_cast<std::size_t>(taps.taps);
  for (int j = 0; j < out_rows; ++j) {
    std::int16_t const* const w = taps.weights.data() + static_cast<std::size_t>(j) * n;
    In const* const first =
        in + static_cast<std::size_t>(taps.first[static_cast<std::size_t>(j)]) * in_stride;
    std::int16_t* const dst = row_start<Group>(out, j, out_rows);
    if (auto const* one = std::find(w, w + n, weight_max); one != w + n) {  // as the AVX2 pass
      In const* const src = first + static_cast<std::size_t>(one - w) * in_stride;
      for (std::size_t i = 0; i < count; ++i) value_at<Group>(dst, i, out.stride) = q7(src[i]);
      continue;
    }
    for (std::size_t i = 0; i < count; ++i) {
      std::int16_t acc = 0;
      for (std::size_t k = 0; k < n; ++k) {
        acc = static_cast<std::int16_t>(acc + step(q7(first[k * in_stride + i]), w[k]));
      }
      value_at<Group>(dst, i, out.stride) = acc;
    }
  }
}

std::uint8_t narrow(std::int16_t v) noexcept {
  return static_cast<std::uint8_t>(std::clamp((v + (1 << (q7_bits - 1))) >> q7_bits, 0, 255));
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

// RGBX pixels -> RGB bytes, pixels [from, width) of the output row, mirrored if asked.
void copy_row_portable(std::uint8_t const* src, int from, int width, bool mirror,
                       std::uint8_t* dst) noexcept {
  for (int c = from; c < width; ++c) {
    std::uint8_t const* p = src + 4 * static_cast<std::size_t>(mirror ? width - 1 - c : c);
    std::uint8_t* d = dst + 3 * static_cast<std::size_t>(c);
    d[0] = p[0];
    d[1] = p[1];
    d[2] = p[2];
  }
}

// YCbCr -> RGB, BT.601 full range as JPEG's: R = Y + 1.402 Cr', G = Y - 0.34414 Cb' -
// 0.71414 Cr', B = Y + 1.772 Cb' (Cb', Cr' centred on 0). In Q7 with Q15 factors below one:
// each factor over one is split (1.402 = 1 + 0.402). The sums saturate, which clamps.
constexpr std::int16_t chroma_zero = 128 << q7_bits;
constexpr std::int16_t k_r = 13173;   // 0.402 (of 1.402)
constexpr std::int16_t k_gb = 11277;  // 0.34414
constexpr std::int16_t k_gr = 23401;  // 0.71414
constexpr std::int16_t k_b = 25297;   // 0.772 (of 1.772)

std::int16_t saturated(int v) noexcept {
  return static_cast<std::int16_t>(std::clamp(v, -32768, 32767));
}

// Pixels [from, count) of the three planes -> RGB bytes.
void ycc_to_rgb_portable(std::int16_t const* y, std::int16_t const* cb, std::int16_t const* cr,
                         std::size_t from, std::size_t count, std::uint8_t* out) noexcept {
  for (std::size_t i = from; i < count; ++i) {
    auto const b_ = static_cast<std::int16_t>(cb[i] - chroma_zero);
    auto const r_ = static_cast<std::int16_t>(cr[i] - chroma_zero);
    int const red = r_ + step(r_, k_r);
    int const green = step(b_, k_gb) + step(r_, k_gr);
    int const blue = b_ + step(b_, k_b);
    out[3 * i] = narrow(saturated(y[i] + red));
    out[3 * i + 1] = narrow(saturated(y[i] - green));
    out[3 * i + 2] = narrow(saturated(y[i] + blue));
  }
}

struct kernels {
  template <class In>
  using pass = void (*)(In const*, std::size_t, std::size_t, axis_taps const&, int,
                        pass_output) noexcept;
  // Each pass writes its output turned (pass_output): RGBX pixels, or a plane's samples.
  pass<std::int16_t> filter_pixels;
  pass<std::uint8_t> filter_pixel_bytes;
  pass<std::int16_t> filter_samples;
  pass<std::uint8_t> filter_sample_bytes;
  void (*narrow_rgb)(std::int16_t const*, std::size_t, bool, std::uint8_t*) noexcept;
  void (*copy_row)(std::uint8_t const*, int, bool, std::uint8_t*) noexcept;
  void (*ycc_to_rgb)(std::int16_t const*, std::int16_t const*, std::int16_t const*, std::size_t,
                     bool, std::uint8_t*) noexcept;
};

void narrow_plain(std::int16_t const* in, std::size_t pixels, bool /*more_follow*/,
                  std::uint8_t* out) noexcept {
  narrow_portable(in, 0, pixels, out);
}
void copy_row_plain(std::uint8_t const* src, int width, bool mirror, std::uint8_t* dst) noexcept {
  copy_row_portable(src, 0, width, mirror, dst);
}
void ycc_to_rgb_plain(std::int16_t const* y, std::int16_t const* cb, std::int16_t const* cr,
                      std::size_t count, bool /*more_follow*/, std::uint8_t* out) noexcept {
  ycc_to_rgb_portable(y, cb, cr, 0, count, out);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define GPUFEED_RESIZE_AVX2 1
// The same arithmetic, 16 values at a time, for CPUs with AVX2 (chosen at run time): a whole
// pass, so that nothing is dispatched per row. With the tap count fixed, the loop over taps
// unrolls and the weights and row pointers stay in registers; Taps = 0 takes it at run time.
// 16 values of a row in Q7 (q7() above).
[[gnu::target("avx2"), gnu::always_inline]] inline __m256i load_q7(std::int16_t const* p) noexcept {
  return _mm256_loadu_si256(reinterpret_cast<__m256i const*>(p));
}
[[gnu::target("avx2"), gnu::always_inline]] inline __m256i load_q7(std::uint8_t const* p) noexcept {
  return _mm256_slli_epi16(
      _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<__m128i const*>(p))), q7_bits);
}

// Values [i, i + 16) of an output row that starts at `dst` (row_start), turned: the four pixels
// to four rows, or the sixteen samples to sixteen rows.
template <int Group>
[[gnu::target("avx2"), gnu::always_inline]] inline void store16(std::int16_t* dst, std::size_t i,
                                                                std::size_t stride,
                                                                __m256i v) noexcept {
  if constexpr (Group == 4) {
    std::int16_t* const at = dst + i / 4 * stride;
    __m128i const lo = _mm256_castsi256_si128(v);
    __m128i const hi = _mm256_extracti128_si256(v, 1);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(at), lo);
    _mm_storeh_pd(reinterpret_cast<double*>(at + stride), _mm_castsi128_pd(lo));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(at + 2 * stride), hi);
    _mm_storeh_pd(reinterpret_cast<double*>(at + 3 * stride), _mm_castsi128_pd(hi));
  } else {
    static_assert(Group == 1);
    alignas(32) std::array<std::int16_t, 16> values;
    _mm256_store_si256(reinterpret_cast<__m256i*>(values.data()), v);
    for (std::size_t k = 0; k < values.size(); ++k) dst[(i + k) * stride] = values[k];
  }
}

// A sample pair's eight columns, [s0 .. s7 of v(k) | s0 .. s7 of v(k + 8)], to `near` (row
// k's) and `far` (row k + 8's); then both a row on.
[[gnu::target("avx2"), gnu::always_inline]] inline void store_two_rows(std::int16_t*& near,
                                                                       std::int16_t*& far,
                                                                       std::size_t stride,
                                                                       __m256i v) noexcept {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(near), _mm256_castsi256_si128(v));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(far), _mm256_extracti128_si256(v, 1));
  near += stride;
  far += stride;
}

// An 8 x 16 block, a[s] = values [i, i + 16) of slot s, turned: transposed in registers (per
// 128-bit lane, three rounds of unpacks: 16, 32 and 64 bits) into [s0 .. s7 of v(k) | s0 .. s7
// of v(k + 8)], each sample's eight slots stored to its row from `at` (value i's row) on.
[[gnu::target("avx2"), gnu::always_inline]] inline void store_block_turned(
    __m256i const* a, std::int16_t* at, std::size_t stride) noexcept {
  __m256i const t0 = _mm256_unpacklo_epi16(a[0], a[1]);
  __m256i const t1 = _mm256_unpackhi_epi16(a[0], a[1]);
  __m256i const t2 = _mm256_unpacklo_epi16(a[2], a[3]);
  __m256i const t3 = _mm256_unpackhi_epi16(a[2], a[3]);
  __m256i const t4 = _mm256_unpacklo_epi16(a[4], a[5]);
  __m256i const t5 = _mm256_unpackhi_epi16(a[4], a[5]);
  __m256i const t6 = _mm256_unpacklo_epi16(a[6], a[7]);
  __m256i const t7 = _mm256_unpackhi_epi16(a[6], a[7]);
  __m256i const u0 = _mm256_unpacklo_epi32(t0, t2);
  __m256i const u1 = _mm256_unpackhi_epi32(t0, t2);
  __m256i const u2 = _mm256_unpacklo_epi32(t1, t3);
  __m256i const u3 = _mm256_unpackhi_epi32(t1, t3);
  __m256i const u4 = _mm256_unpacklo_epi32(t4, t6);
  __m256i const u5 = _mm256_unpackhi_epi32(t4, t6);
  __m256i const u6 = _mm256_unpacklo_epi32(t5, t7);
  __m256i const u7 = _mm256_unpackhi_epi32(t5, t7);
  // Sample k's column to rows k and k + 8: two pointers stepped a row at a time.
  std::int16_t* near = at;
  std::int16_t* far = near + 8 * stride;
  store_two_rows(near, far, stride, _mm256_unpacklo_epi64(u0, u4));
  store_two_rows(near, far, stride, _mm256_unpackhi_epi64(u0, u4));
  store_two_rows(near, far, stride, _mm256_unpacklo_epi64(u1, u5));
  store_two_rows(near, far, stride, _mm256_unpackhi_epi64(u1, u5));
  store_two_rows(near, far, stride, _mm256_unpacklo_epi64(u2, u6));
  store_two_rows(near, far, stride, _mm256_unpackhi_epi64(u2, u6));
  store_two_rows(near, far, stride, _mm256_unpacklo_epi64(u3, u7));
  store_two_rows(near, far, stride, _mm256_unpackhi_epi64(u3, u7));
}

// Values [i, i + 16) of the output row whose taps' first input row is `first`, the taps'
// rows `stride` apart, weighted by `w` (broadcast already).
template <class In, std::size_t... K>
[[gnu::target("avx2"), gnu::always_inline]] inline __m256i weighted_sum(
    In const* first, std::size_t stride, __m256i const* w, std::size_t i,
    std::index_sequence<K...>) noexcept {
  __m256i acc = _mm256_setzero_si256();
  ((acc = _mm256_add_epi16(acc, _mm256_mulhrs_epi16(load_q7(first + K * stride + i), w[K]))), ...);
  return acc;
}

// The pass row in slot `slot` of a turned block of `block` rows from row j: slot s is the s-th
// output column from the left, row j + s, or j + block - 1 - s when mirrored.
constexpr std::size_t slot_row(int j, std::size_t slot, std::size_t block, bool mirror) noexcept {
  return static_cast<std::size_t>(j) + (mirror ? block - 1 - slot : slot);
}

// The rows j .. j + Block - 1 of a pass with Taps taps, in slot order (slot_row). For each, its
// taps' first input row, its weights broadcast, and the tap that holds all the weight where one
// does (a copy: enlarging by a ratio such as 5/7 makes every seventh row one), so that a turned
// block keeps its copied rows instead of giving the block up.
template <std::size_t Block, std::size_t Taps, class In>
struct block_rows {
  In const* first[Block];
  __m256i weight[Block][Taps];
  int copy[Block];

  [[gnu::target("avx2")]] block_rows(In const* in, std::size_t in_stride, axis_taps const& taps,
                                     int j, bool mirror) noexcept {
    for (std::size_t slot = 0; slot < Block; ++slot) {
      std::size_t const row = slot_row(j, slot, Block, mirror);
      first[slot] = in + static_cast<std::size_t>(taps.first[row]) * in_stride;
      std::int16_t const* const w = taps.weights.data() + row * Taps;
      copy[slot] = -1;
      for (std::size_t k = 0; k < Taps; ++k) {
        weight[slot][k] = _mm256_set1_epi16(w[k]);
        if (w[k] == weight_max) copy[slot] = static_cast<int>(k);
      }
    }
  }

  // Values [i, i + 16) of slot `slot`'s row.
  template <std::size_t... K>
  [[gnu::target("avx2"), gnu::always_inline]] __m256i values(
      std::size_t slot, std::size_t in_stride, std::size_t i,
      std::index_sequence<K...> seq) const noexcept {
    if (copy[slot] >= 0) {
      return load_q7(first[slot] + static_cast<std::size_t>(copy[slot]) * in_stride + i);
    }
    return weighted_sum(first[slot], in_stride, weight[slot], i, seq);
  }
};

// Four turned output rows at once: rows j .. j + 3 of the pass are columns c(j) .. c(j + 3)
// of the output, side by side (descending when mirrored). Their values [i, i + 16) are four
// pixels each; a 4 x 4 transpose of 64-bit pixels makes each pixel's four columns one 32-byte
// store, where storing row by row takes four 8-byte stores per row (16 against 4: the stores,
// not the arithmetic, bound a turned pass). Copied rows stay in the block (block_rows).
template <int Taps, class In, std::size_t... K>
[[gnu::target("avx2")]] void filter_four_turned(In const* in, std::size_t in_stride,
                                                std::size_t count, axis_taps const& taps, int j,
                                                int out_rows, pass_output out,
                                                std::index_sequence<K...> seq) noexcept {
  block_rows<4, sizeof...(K), In> const rows{in, in_stride, taps, j, out.mirror};
  // The four columns' leftmost: c(j) unmirrored, c(j + 3) mirrored.
  std::int16_t* const dst = row_start<4>(out, out.mirror ? j + 3 : j, out_rows);
  for (std::size_t i = 0; i < count; i += 16) {
    __m256i const a0 = rows.values(0, in_stride, i, seq);
    __m256i const a1 = rows.values(1, in_stride, i, seq);
    __m256i const a2 = rows.values(2, in_stride, i, seq);
    __m256i const a3 = rows.values(3, in_stride, i, seq);
    // a_s = [p0 p1 | p2 p3] of slot s (a pixel: 64 bits) -> v_p = [s0 s1 | s2 s3] of pixel p.
    __m256i const t0 = _mm256_unpacklo_epi64(a0, a1);  // [s0p0 s1p0 | s0p2 s1p2]
    __m256i const t1 = _mm256_unpackhi_epi64(a0, a1);  // [s0p1 s1p1 | s0p3 s1p3]
    __m256i const t2 = _mm256_unpacklo_epi64(a2, a3);
    __m256i const t3 = _mm256_unpackhi_epi64(a2, a3);
    std::int16_t* const at = dst + i / 4 * out.stride;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(at), _mm256_permute2x128_si256(t0, t2, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(at + out.stride),
                        _mm256_permute2x128_si256(t1, t3, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(at + 2 * out.stride),
                        _mm256_permute2x128_si256(t0, t2, 0x31));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(at + 3 * out.stride),
                        _mm256_permute2x128_si256(t1, t3, 0x31));
  }
}

// Eight turned output rows of samples at once: rows j .. j + 7 of the pass are columns
// c(j) .. c(j + 7) of the output. Their values [i, i + 16) are an 8 x 16 block, turned in
// registers (store_block_turned): each of the 16 samples' eight columns is one 16-byte store,
// where a separate transpose would write the block and read it back. Copied rows stay in the
// block (block_rows).
template <int Taps, class In, std::size_t... K, std::size_t... S>
[[gnu::target("avx2")]] void filter_eight_turned(In const* in, std::size_t in_stride,
                                                 std::size_t count, axis_taps const& taps, int j,
                                                 int out_rows, pass_output out,
                                                 std::index_sequence<K...> seq,
                                                 std::index_sequence<S...> /*slots*/) noexcept {
  block_rows<sizeof...(S), sizeof...(K), In> const rows{in, in_stride, taps, j, out.mirror};
  std::int16_t* const dst = row_start<1>(out, out.mirror ? j + 7 : j, out_rows);
  for (std::size_t i = 0; i < count; i += 16) {
    __m256i const a[] = {rows.values(S, in_stride, i, seq)...};
    store_block_turned(a, dst + i * out.stride, out.stride);
  }
}

template <int Taps, class In, int Group, std::size_t... K>
[[gnu::target("avx2")]] void filter_pass_avx2_unrolled(
    In const* in, std::size_t in_stride, std::size_t count, axis_taps const& taps, int out_rows,
    pass_output out, std::index_sequence<K...> taps_seq) noexcept {
  for (int j = 0; j < out_rows; ++j) {
    if constexpr (Group == 4) {
      if (j % 4 == 0 && j + 4 <= out_rows) {
        filter_four_turned<Taps, In>(in, in_stride, count, taps, j, out_rows, out, taps_seq);
        j += 3;
        continue;
      }
    } else if constexpr (Group == 1) {
      if (j % 8 == 0 && j + 8 <= out_rows) {
        filter_eight_turned<Taps, In>(in, in_stride, count, taps, j, out_rows, out, taps_seq,
                                      std::make_index_sequence<8>{});
        j += 7;
        continue;
      }
    }
    // The rows after the last whole block, one at a time.
    block_rows<1, sizeof...(K), In> const row{in, in_stride, taps, j, false};
    std::int16_t* const dst = row_start<Group>(out, j, out_rows);
    for (std::size_t i = 0; i < count; i += 16) {
      store16<Group>(dst, i, out.stride, row.values(0, in_stride, i, taps_seq));
    }
  }
}

// Tap k of the eight slots' rows: a[s] += the row `offset` values on from first[s], times the
// slot's weight k.
template <class In, std::size_t... S>
[[gnu::target("avx2"), gnu::always_inline]] inline void add_tap(
    __m256i* a, In const* const* first, std::int16_t const* const* weights, std::size_t k,
    std::size_t offset, std::index_sequence<S...>) noexcept {
  ((a[S] = _mm256_add_epi16(
        a[S], _mm256_mulhrs_epi16(load_q7(first[S] + offset), _mm256_set1_epi16(weights[S][k])))),
   ...);
}

// filter_eight_turned with the tap count known at run time: more than 6, a reduction by more
// than about 2.5, where the triangle reaches several inputs with weight and none is a copy (as in
// filter_pass_avx2_any's rows).
template <class In>
[[gnu::target("avx2")]] void filter_eight_turned_any(In const* in, std::size_t in_stride,
                                                     std::size_t count, axis_taps const& taps,
                                                     int j, int out_rows,
                                                     pass_output out) noexcept {
  constexpr std::size_t block = 8;
  auto const n = static_cast<std::size_t>(taps.taps);
  In const* first[block];
  std::int16_t const* weights[block];
  for (std::size_t slot = 0; slot < block; ++slot) {
    std::size_t const row = slot_row(j, slot, block, out.mirror);
    first[slot] = in + static_cast<std::size_t>(taps.first[row]) * in_stride;
    weights[slot] = taps.weights.data() + row * n;
  }
  std::int16_t* const dst = row_start<1>(out, out.mirror ? j + 7 : j, out_rows);
  for (std::size_t i = 0; i < count; i += 16) {
    __m256i a[block] = {};
    for (std::size_t k = 0; k < n; ++k) {
      add_tap(a, first, weights, k, k * in_stride + i, std::make_index_sequence<block>{});
    }
    store_block_turned(a, dst + i * out.stride, out.stride);
  }
}

template <class In, int Group>
[[gnu::target("avx2")]] void filter_pass_avx2_any(In const* in, std::size_t in_stride,
                                                  std::size_t count, axis_taps const& taps,
                                                  int out_rows, pass_output out) noexcept {
  auto const n = static_cast<std::size_t>(taps.taps);
  for (int j = 0; j < out_rows; ++j) {
    if constexpr (Group == 1) {
      if (j % 8 == 0 && j + 8 <= out_rows) {
        filter_eight_turned_any(in, in_stride, count, taps, j, out_rows, out);
        j += 7;
        continue;
      }
    }
    std::int16_t const* const w = taps.weights.data() + static_cast<std::size_t>(j) * n;
    In const* const first =
        in + static_cast<std::size_t>(taps.first[static_cast<std::size_t>(j)]) * in_stride;
    std::int16_t* const dst = row_start<Group>(out, j, out_rows);
    for (std::size_t i = 0; i < count; i += 16) {
      __m256i acc = _mm256_setzero_si256();
      for (std::size_t k = 0; k < n; ++k) {
        acc = _mm256_add_epi16(
            acc, _mm256_mulhrs_epi16(load_q7(first + k * in_stride + i), _mm256_set1_epi16(w[k])));
      }
      store16<Group>(dst, i, out.stride, acc);
    }
  }
}

template <int Taps, class In, int Group>
void filter_pass_avx2_fixed(In const* in, std::size_t in_stride, std::size_t count,
                            axis_taps const& taps, int out_rows, pass_output out) noexcept {
  filter_pass_avx2_unrolled<Taps, In, Group>(
      in, in_stride, count, taps, out_rows, out,
      std::make_index_sequence<static_cast<std::size_t>(Taps)>{});
}

// `count` is a multiple of 16 here (filter_rows pads it).
template <class In, int Group>
void filter_pass_avx2(In const* in, std::size_t in_stride, std::size_t count, axis_taps const& taps,
                      int out_rows, pass_output out) noexcept {
  static constexpr std::array<kernels::pass<In>, 7> unrolled{
      filter_pass_avx2_any<In, Group>,      filter_pass_avx2_fixed<1, In, Group>,
      filter_pass_avx2_fixed<2, In, Group>, filter_pass_avx2_fixed<3, In, Group>,
      filter_pass_avx2_fixed<4, In, Group>, filter_pass_avx2_fixed<5, In, Group>,
      filter_pass_avx2_fixed<6, In, Group>};
  auto const n = static_cast<std::size_t>(taps.taps);
  (n < unrolled.size() ? unrolled[n] : filter_pass_avx2_any<In, Group>)(in, in_stride, count, taps,
                                                                        out_rows, out);
}

// `more_follow`: the output goes on after these pixels (the next row), so the last stores may
// reach 4 bytes into it (they are written over later).
[[gnu::target("avx2")]] void narrow_avx2(std::int16_t const* in, std::size_t pixels,
                                         bool more_follow, std::uint8_t* out) noexcept {
  __m256i const half = _mm256_set1_epi16(1 << (q7_bits - 1));
  // Per 128-bit lane: RGBX RGBX RGBX RGBX bytes -> RGB x 4 in the low 12 bytes.
  __m128i const pick = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  std::size_t p = 0;
  // 8 pixels (32 values) per round; each round's 16-byte stores reach 4 bytes past its 24.
  std::size_t const spare = more_follow ? 0 : 4;
  for (; p + 8 + spare <= pixels; p += 8) {
    // Saturating: a colour converted from YCbCr may sit at the top of the int16 range.
    __m256i const a = _mm256_srai_epi16(
        _mm256_adds_epi16(_mm256_loadu_si256(reinterpret_cast<__m256i const*>(in + 4 * p)), half),
        q7_bits);
    __m256i const b = _mm256_srai_epi16(
        _mm256_adds_epi16(_mm256_loadu_si256(reinterpret_cast<__m256i const*>(in + 4 * p + 16)),
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

// Four pixels at a time: RGBX x 4 -> RGB x 4 (in reverse order when mirrored).
[[gnu::target("avx2")]] void copy_row_avx2(std::uint8_t const* src, int width, bool mirror,
                                           std::uint8_t* dst) noexcept {
  __m128i const forward = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  __m128i const backward = _mm_setr_epi8(12, 13, 14, 8, 9, 10, 4, 5, 6, 0, 1, 2, -1, -1, -1, -1);
  int c = 0;
  // Each 16-byte store reaches 4 bytes past its 12: the last 4 pixels or fewer go to the
  // plain loop.
  for (; c + 5 <= width; c += 4) {
    int const at = mirror ? width - 4 - c : c;
    __m128i const pixels =
        _mm_loadu_si128(reinterpret_cast<__m128i const*>(src + 4 * static_cast<std::size_t>(at)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 3 * static_cast<std::size_t>(c)),
                     _mm_shuffle_epi8(pixels, mirror ? backward : forward));
  }
  copy_row_portable(src, c, width, mirror, dst);
}

// Q7 -> the byte scale, rounded and saturated (packus then clamps to 0..255).
[[gnu::target("avx2"), gnu::always_inline]] inline __m256i q7_to_bytes_scale(__m256i v) noexcept {
  return _mm256_srai_epi16(_mm256_adds_epi16(v, _mm256_set1_epi16(1 << (q7_bits - 1))), q7_bits);
}

// 16 pixels a round: colour in Q7, down to bytes, interleaved R G B with byte shuffles.
// `more_follow`: the output goes on after these pixels (the next row), so the last stores may
// reach 8 bytes into it (they are written over later).
[[gnu::target("avx2")]] void ycc_to_rgb_avx2(std::int16_t const* y, std::int16_t const* cb,
                                             std::int16_t const* cr, std::size_t count,
                                             bool more_follow, std::uint8_t* out) noexcept {
  __m256i const zero_chroma = _mm256_set1_epi16(chroma_zero);
  __m256i const kr = _mm256_set1_epi16(k_r);
  __m256i const kgb = _mm256_set1_epi16(k_gb);
  __m256i const kgr = _mm256_set1_epi16(k_gr);
  __m256i const kb = _mm256_set1_epi16(k_b);
  std::size_t const spare = more_follow ? 0 : 3;  // the last store writes 8 bytes too many
  std::size_t i = 0;
  for (; i + 16 + spare <= count; i += 16) {
    __m256i const luma = _mm256_loadu_si256(reinterpret_cast<__m256i const*>(y + i));
    __m256i const b_ =
        _mm256_sub_epi16(_mm256_loadu_si256(reinterpret_cast<__m256i const*>(cb + i)), zero_chroma);
    __m256i const r_ =
        _mm256_sub_epi16(_mm256_loadu_si256(reinterpret_cast<__m256i const*>(cr + i)), zero_chroma);
    __m256i const red = q7_to_bytes_scale(
        _mm256_adds_epi16(luma, _mm256_add_epi16(r_, _mm256_mulhrs_epi16(r_, kr))));
    __m256i const green = q7_to_bytes_scale(_mm256_subs_epi16(
        luma, _mm256_add_epi16(_mm256_mulhrs_epi16(b_, kgb), _mm256_mulhrs_epi16(r_, kgr))));
    __m256i const blue = q7_to_bytes_scale(
        _mm256_adds_epi16(luma, _mm256_add_epi16(b_, _mm256_mulhrs_epi16(b_, kb))));
    store_rgb16(red, green, blue, out + 3 * i);
  }
  ycc_to_rgb_portable(y, cb, cr, i, count, out);
}
#endif

kernels const plain_kernels{filter_pass_plain<std::int16_t, 4>,
                            filter_pass_plain<std::uint8_t, 4>,
                            filter_pass_plain<std::int16_t, 1>,
                            filter_pass_plain<std::uint8_t, 1>,
                            narrow_plain,
                            copy_row_plain,
                            ycc_to_rgb_plain};

kernels pick_kernels() noexcept {
#if defined(GPUFEED_RESIZE_AVX2)
  __builtin_cpu_init();  // this runs during static initialization
  if (__builtin_cpu_supports("avx2")) {
    return {filter_pass_avx2<std::int16_t, 4>,
            filter_pass_avx2<std::uint8_t, 4>,
            filter_pass_avx2<std::int16_t, 1>,
            filter_pass_avx2<std::uint8_t, 1>,
            narrow_avx2,
            copy_row_avx2,
            ycc_to_rgb_avx2};
  }
#endif
  return plain_kernels;
}

kernels const best_kernels = pick_kernels();
std::atomic<kernels const*> chosen_kernels{&best_kernels};

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
  return chosen_kernels.exchange(portable ? &plain_kernels : &best_kernels) != &plain_kernels;
}

bool avx2_kernels_in_use() noexcept {
#if defined(GPUFEED_RESIZE_AVX2)
  return active().copy_row == copy_row_avx2;
#else
  return false;
#endif
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
