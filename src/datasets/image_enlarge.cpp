// Named image_*.cpp so that src/CMakeLists.txt's glob of the image datasets' sources builds it.
//
// resize_rgbx_to_rgb's path for crops no larger than the output in either axis (most
// RandomResizedCrop crops of small images): there the triangle filter is plain bilinear, each
// output blends two neighbouring inputs per axis, and the general path's transposes and
// per-tap rounding cost more than the blending itself. Here each input row is blended across
// once, when the first output row needs it (a ring of two rows, so it stays in the L1 cache),
// and output rows are blended down from two of those, straight into RGB bytes.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gpufeed/detail/image_resize.hpp"
#include "gpufeed/error.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define GPUFEED_ENLARGE_AVX2 1
#endif

namespace gpufeed::detail {

namespace {

// Weights in Q14 (a pair sums to 2^14); the blend across leaves Q7 (pixel x 2^7, at most
// 255 x 2^7 = 32640, an int16), the blend down rounds Q7 x Q14 to bytes once. Every sum is exact
// in int32 (32640 x 2^14 < 2^31), so the SIMD and plain kernels give the same bytes.
constexpr int weight_bits = 14;
constexpr std::int32_t weight_one = 1 << weight_bits;
constexpr int q7_bits = 7;
constexpr int across_shift = weight_bits - q7_bits;  // bytes x Q14 -> Q7
constexpr int down_shift = weight_bits + q7_bits;    // Q7 x Q14 -> bytes

// The bilinear taps of one axis enlarging `length` inputs from `start` (the window has `window`
// inputs) to `outputs`: output i blends inputs first[i] and first[i] + 1 (the second clamped to
// the window; its weight is then 0), weights packed as w0 | w1 << 16 (pmaddwd's pairs). The same
// triangle as the general path (PIL's BILINEAR with a support of one input). For the SIMD blend
// across, per block of four outputs: the lowest input `base` and, for vpermd, the eight pixels
// (first, second of each output) relative to it; and each output's weights four times over.
struct pair_taps {
  std::vector<int> first;
  std::vector<int> second;
  std::vector<std::int32_t> packed;
  std::vector<int> base;             // per block of four outputs
  std::vector<std::int32_t> lanes;   // 8 per block
  std::vector<std::int32_t> spread;  // 4 per output
};

void make_pair_taps(pair_taps& t, double start, double length, int window, int outputs,
                    bool reverse) {
  auto const n = static_cast<std::size_t>(outputs);
  // Whole blocks of four outputs: the padding repeats the last output's pixels, weighing 0.
  std::size_t const padded = (n + 3) / 4 * 4;
  t.first.resize(padded);
  t.second.resize(padded);
  t.packed.resize(padded);
  double const scale = length / outputs;
  for (std::size_t i = 0; i < n; ++i) {
    // The triangle over output i's centre (window pixels): pixels lo and lo + 1 when the centre
    // lies between theirs, weighted by the distance (the two weights sum to one); at the window's
    // edges the one pixel there.
    double const x = start + (static_cast<double>(i) + 0.5) * scale - 0.5;
    int const lo = std::min(static_cast<int>(x), window - 1);  // x >= -0.5: 0 where x < 0
    bool const pair = x >= 0 && lo + 1 < window;
    std::int32_t const q1 =
        pair ? static_cast<std::int32_t>((x - lo) * weight_one + 0.5) : std::int32_t{0};
    std::size_t const at = reverse ? n - 1 - i : i;
    t.first[at] = lo;
    t.second[at] = std::min(lo + 1, window - 1);
    t.packed[at] = (weight_one - q1) | (q1 << 16);  // NOLINT(hicpp-signed-bitwise)
  }
  for (std::size_t i = n; i < padded; ++i) {
    t.first[i] = t.first[n - 1];
    t.second[i] = t.second[n - 1];
    t.packed[i] = 0;
  }
  t.base.resize(padded / 4);
  t.lanes.resize(2 * padded);
  t.spread.resize(4 * padded);
  for (std::size_t block = 0; block < padded / 4; ++block) {
    std::size_t const i = 4 * block;
    int const base = std::min(t.first[i], t.first[i + 3]);  // the outputs run either way
    t.base[block] = base;
    for (std::size_t k = 0; k < 4; ++k) {
      t.lanes[2 * i + 2 * k] = t.first[i + k] - base;  // 0 .. 4 (at most one input per output)
      t.lanes[2 * i + 2 * k + 1] = t.second[i + k] - base;
    }
  }
  for (std::size_t i = 0; i < padded; ++i) {
    std::fill_n(t.spread.begin() + static_cast<std::ptrdiff_t>(4 * i), 4, t.packed[i]);
  }
}

std::int32_t low_weight(std::int32_t packed) noexcept {
  return static_cast<std::int16_t>(packed & 0xFFFF);  // NOLINT(hicpp-signed-bitwise)
}
std::int32_t high_weight(std::int32_t packed) noexcept {
  return packed >> 16;  // NOLINT(hicpp-signed-bitwise)
}

// Outputs [from, outputs) of one row across: RGBX bytes -> RGBX Q7.
void across_portable(std::uint8_t const* row, pair_taps const& t, std::size_t from,
                     std::size_t outputs, std::int16_t* out) noexcept {
  for (std::size_t i = from; i < outputs; ++i) {
    std::uint8_t const* a = row + 4 * static_cast<std::size_t>(t.first[i]);
    std::uint8_t const* b = row + 4 * static_cast<std::size_t>(t.second[i]);
    std::int32_t const w0 = low_weight(t.packed[i]);
    std::int32_t const w1 = high_weight(t.packed[i]);
    for (std::size_t c = 0; c < 4; ++c) {
      out[4 * i + c] = static_cast<std::int16_t>(
          (a[c] * w0 + b[c] * w1 + (1 << (across_shift - 1))) >> across_shift);
    }
  }
}

// Pixels [from, pixels) of two Q7 RGBX rows blended down -> RGB bytes.
void down_portable(std::int16_t const* a, std::int16_t const* b, std::int32_t packed,
                   std::size_t from, std::size_t pixels, std::uint8_t* out) noexcept {
  std::int32_t const w0 = low_weight(packed);
  std::int32_t const w1 = high_weight(packed);
  for (std::size_t p = from; p < pixels; ++p) {
    for (std::size_t c = 0; c < 3; ++c) {
      std::int32_t const v =
          (a[4 * p + c] * w0 + b[4 * p + c] * w1 + (1 << (down_shift - 1))) >> down_shift;
      out[3 * p + c] = static_cast<std::uint8_t>(std::clamp(v, 0, 255));
    }
  }
}

struct enlarge_kernels {
  void (*across)(std::uint8_t const*, pair_taps const&, std::size_t, std::size_t,
                 std::int16_t*) noexcept;
  void (*down)(std::int16_t const*, std::int16_t const*, std::int32_t, std::size_t, bool,
               std::uint8_t*) noexcept;
};

void across_plain(std::uint8_t const* row, pair_taps const& t, std::size_t outputs,
                  std::size_t /*readable*/, std::int16_t* out) noexcept {
  across_portable(row, t, 0, outputs, out);
}
void down_plain(std::int16_t const* a, std::int16_t const* b, std::int32_t packed,
                std::size_t pixels, bool /*more_follow*/, std::uint8_t* out) noexcept {
  down_portable(a, b, packed, 0, pixels, out);
}

#if defined(GPUFEED_ENLARGE_AVX2)
// The pixel pairs of outputs i and i + 1 (8 bytes from first[i]: the second pixel is
// first[i] + 1, or, at the window's edge, a pixel of weight 0 within the row's padding).
[[gnu::target("avx2"), gnu::always_inline]] inline __m128i pixel_pairs(std::uint8_t const* row,
                                                                       pair_taps const& t,
                                                                       std::size_t i) noexcept {
  auto const at = [&](std::size_t k) {
    return reinterpret_cast<__m128i const*>(row + 4 * static_cast<std::size_t>(t.first[k]));
  };
  return _mm_unpacklo_epi64(_mm_loadl_epi64(at(i)), _mm_loadl_epi64(at(i + 1)));
}

// Two outputs' pixel pairs (8 bytes each: lane 0 the first output's) blended across with their
// weights (`spread`: four copies of each output's pair), as int32 RGBX in Q7. The pixels widen to
// int16, channels paired (R0 R1 G0 G1 ...) for pmaddwd with (w0, w1).
[[gnu::target("avx2"), gnu::always_inline]] inline __m256i blend_pairs(
    __m128i pixels, std::int32_t const* spread) noexcept {
  __m256i const pair_channels =
      _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15, 0, 1, 8, 9, 2, 3, 10,
                       11, 4, 5, 12, 13, 6, 7, 14, 15);
  __m256i const wide = _mm256_shuffle_epi8(_mm256_cvtepu8_epi16(pixels), pair_channels);
  __m256i const weights = _mm256_loadu_si256(reinterpret_cast<__m256i const*>(spread));
  return _mm256_srai_epi32(_mm256_add_epi32(_mm256_madd_epi16(wide, weights),
                                            _mm256_set1_epi32(1 << (across_shift - 1))),
                           across_shift);
}

// Four outputs a round; `t` is padded to whole blocks of four and `out` has room for them.
// Where the eight pixels from the block's lowest input lie within the row and its padding
// (`readable` pixels from `row`), one load and one vpermd gather the block's pixel pairs; else
// (the row's last pixels) two 8-byte loads per pair of outputs.
[[gnu::target("avx2")]] void across_avx2(std::uint8_t const* row, pair_taps const& t,
                                         std::size_t outputs, std::size_t readable,
                                         std::int16_t* out) noexcept {
  for (std::size_t i = 0; i < outputs; i += 4) {
    auto const base = static_cast<std::size_t>(t.base[i / 4]);
    __m128i first;
    __m128i second;
    if (base + 8 <= readable) {
      __m256i const pixels = _mm256_permutevar8x32_epi32(
          _mm256_loadu_si256(reinterpret_cast<__m256i const*>(row + 4 * base)),
          _mm256_loadu_si256(reinterpret_cast<__m256i const*>(t.lanes.data() + 2 * i)));
      first = _mm256_castsi256_si128(pixels);
      second = _mm256_extracti128_si256(pixels, 1);
    } else {
      first = pixel_pairs(row, t, i);
      second = pixel_pairs(row, t, i + 2);
    }
    // packs: lane 0 holds outputs i, i + 2; lane 1 i + 1, i + 3; the permute orders them.
    __m256i const q7 = _mm256_permute4x64_epi64(
        _mm256_packs_epi32(blend_pairs(first, t.spread.data() + 4 * i),
                           blend_pairs(second, t.spread.data() + 4 * i + 8)),
        0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 4 * i), q7);
  }
}

// Values [at, at + 16) of rows a and b blended down to the byte scale, as int16 in order.
[[gnu::target("avx2"), gnu::always_inline]] inline __m256i down_sixteen(std::int16_t const* a,
                                                                        std::int16_t const* b,
                                                                        std::size_t at,
                                                                        __m256i weights) noexcept {
  __m256i const half = _mm256_set1_epi32(1 << (down_shift - 1));
  __m256i const x = _mm256_loadu_si256(reinterpret_cast<__m256i const*>(a + at));
  __m256i const y = _mm256_loadu_si256(reinterpret_cast<__m256i const*>(b + at));
  __m256i const lo = _mm256_srai_epi32(
      _mm256_add_epi32(_mm256_madd_epi16(_mm256_unpacklo_epi16(x, y), weights), half), down_shift);
  __m256i const hi = _mm256_srai_epi32(
      _mm256_add_epi32(_mm256_madd_epi16(_mm256_unpackhi_epi16(x, y), weights), half), down_shift);
  return _mm256_packs_epi32(lo, hi);  // per lane: the unpacks' order undone
}

// Eight pixels a round. `more_follow`: the output goes on after these pixels (the next row), so
// the last stores may reach 4 bytes into it (they are written over later).
[[gnu::target("avx2")]] void down_avx2(std::int16_t const* a, std::int16_t const* b,
                                       std::int32_t packed, std::size_t pixels, bool more_follow,
                                       std::uint8_t* out) noexcept {
  __m256i const weights = _mm256_set1_epi32(packed);
  // Per 128-bit lane: RGBX RGBX RGBX RGBX bytes -> RGB x 4 in the low 12 bytes.
  __m128i const pick = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  std::size_t const spare = more_follow ? 0 : 2;
  std::size_t p = 0;
  for (; p + 8 + spare <= pixels; p += 8) {
    __m256i const bytes =
        _mm256_permute4x64_epi64(_mm256_packus_epi16(down_sixteen(a, b, 4 * p, weights),
                                                     down_sixteen(a, b, 4 * p + 16, weights)),
                                 0xD8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * p),
                     _mm_shuffle_epi8(_mm256_castsi256_si128(bytes), pick));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * p + 12),
                     _mm_shuffle_epi8(_mm256_extracti128_si256(bytes, 1), pick));
  }
  down_portable(a, b, packed, p, pixels, out);
}
#endif

enlarge_kernels const plain{across_plain, down_plain};

enlarge_kernels const& pick() noexcept {
#if defined(GPUFEED_ENLARGE_AVX2)
  static enlarge_kernels const avx2{across_avx2, down_avx2};
  static bool const has_avx2 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  if (has_avx2 && !portable_resize_in_use()) return avx2;
#endif
  return plain;
}

}  // namespace

bool enlarges(crop_area const& area, int out_width, int out_height) noexcept {
  return area.width <= out_width && area.height <= out_height;
}

void enlarge_rgbx_to_rgb(rgbx_view const& source, crop_area const& area,
                         std::span<std::uint8_t> out, int out_width, int out_height, bool mirror) {
  GPUFEED_EXPECTS(enlarges(area, out_width, out_height),
                  "enlarge_rgbx_to_rgb: the crop is larger than the output");
  GPUFEED_EXPECTS(
      out.size() == 3 * static_cast<std::size_t>(out_width) * static_cast<std::size_t>(out_height),
      "enlarge_rgbx_to_rgb: the output has the wrong size");
  GPUFEED_EXPECTS(area.width > 0 && area.height > 0 && area.x >= 0 && area.y >= 0 &&
                      area.x + area.width <= source.width + 1e-6 &&
                      area.y + area.height <= source.height + 1e-6,
                  "enlarge_rgbx_to_rgb: the crop is not inside the image");
  auto const& k = pick();
  // The window: the whole pixels the area touches (as the general path's).
  int const x0 = std::min(static_cast<int>(std::floor(area.x)), source.width - 1);
  int const y0 = std::min(static_cast<int>(std::floor(area.y)), source.height - 1);
  int const cols =
      std::clamp(static_cast<int>(std::ceil(area.x + area.width - 1e-9)), x0 + 1, source.width) -
      x0;
  int const rows =
      std::clamp(static_cast<int>(std::ceil(area.y + area.height - 1e-9)), y0 + 1, source.height) -
      y0;
  // Pixels of each row that may be read from the window's start: the rest of the row and its
  // padding (rgbx_view).
  std::size_t const readable = static_cast<std::size_t>(source.width - x0) + 2;
  thread_local pair_taps across_taps;
  thread_local pair_taps down_taps;
  make_pair_taps(across_taps, area.x - x0, area.width, cols, out_width, mirror);
  make_pair_taps(down_taps, area.y - y0, area.height, rows, out_height, false);

  // Two rows blended across, by their parity: the rows an output row needs are neighbours, and
  // each is blended once (the rows needed only grow).
  std::size_t const row_values = 4 * ((static_cast<std::size_t>(out_width) + 3) / 4 * 4) + 16;
  thread_local std::vector<std::int16_t> ring;
  if (ring.size() < 2 * row_values) ring.resize(2 * row_values);
  int held[2] = {-1, -1};
  auto const blended = [&](int r) {
    auto const slot = static_cast<std::size_t>(r & 1);
    std::int16_t* const row = ring.data() + slot * row_values;
    if (held[slot] != r) {
      k.across(source.data + static_cast<std::size_t>(y0 + r) * source.stride +
                   4 * static_cast<std::size_t>(x0),
               across_taps, static_cast<std::size_t>(out_width), readable, row);
      held[slot] = r;
    }
    return row;
  };
  for (int j = 0; j < out_height; ++j) {
    auto const at = static_cast<std::size_t>(j);
    std::int16_t const* const a = blended(down_taps.first[at]);
    std::int16_t const* const b = blended(down_taps.second[at]);
    k.down(a, b, down_taps.packed[at], static_cast<std::size_t>(out_width), j + 1 < out_height,
           out.data() + 3 * static_cast<std::size_t>(out_width) * at);
  }
}

}  // namespace gpufeed::detail
