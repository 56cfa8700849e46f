//
// A crop the size of the output (Resize(256) + CenterCrop(224) of an image whose short side is
// 256, a CenterCrop alone) needs no resampling: only the chroma upsampling and the colour
// conversion that libjpeg would do. Done here from the raw planes, for the crop's pixels only,
// straight into the batch, it replaces libjpeg's RGB decode into a buffer and the copy out of
// it; the integers are libjpeg's, so the pixels do not change.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../image_rgb_store.hpp"
#include "gpufeed/error.hpp"
#include "image/resample/image_resize.hpp"

namespace gpufeed::detail {

namespace {

// jdcolor.c's YCbCr -> RGB: 16 fraction bits, FIX(x) = x * 2^16 rounded, each term rounded by
// adding one half before the (arithmetic) shift.
constexpr int scale_bits = 16;
constexpr std::int32_t one_half = std::int32_t{1} << (scale_bits - 1);
constexpr std::int32_t fix_1_402 = 91881;
constexpr std::int32_t fix_1_772 = 116130;
constexpr std::int32_t fix_0_344 = 22554;  // FIX(0.34414)
constexpr std::int32_t fix_0_714 = 46802;  // FIX(0.71414)

std::uint8_t byte_of(int v) noexcept {
  return static_cast<std::uint8_t>(std::clamp(v, 0, 255));
}

void pixel_to_rgb(int y, int cb, int cr, std::uint8_t* out) noexcept {
  int const b = cb - 128;
  int const r = cr - 128;
  out[0] = byte_of(y + ((fix_1_402 * r + one_half) >> scale_bits));
  out[1] = byte_of(y + ((-fix_0_344 * b - fix_0_714 * r + one_half) >> scale_bits));
  out[2] = byte_of(y + ((fix_1_772 * b + one_half) >> scale_bits));
}

// The chroma samples one pixel row is made from (jdsample.c): the row of the plane nearest it
// and the next nearest (above it for the upper pixel row of a pair, below for the lower; the
// image's first and last rows repeated beyond its edges).
struct chroma_source {
  std::uint8_t const* near = nullptr;
  std::uint8_t const* far = nullptr;
  int width = 0;  // samples in a row
  int x_step = 1;
  int y_step = 1;
};

chroma_source chroma_rows(plane_view const& p, int row) noexcept {
  int const here = row / p.y_step;
  int other = here;
  if (p.y_step == 2)
    other = row % 2 == 0 ? std::max(here - 1, 0) : std::min(here + 1, p.height - 1);
  auto const at = [&](int r) { return p.data + static_cast<std::size_t>(r) * p.stride; };
  return {at(here), at(other), p.width, p.x_step, p.y_step};
}

// Vertically 3/4 of the nearer sample and 1/4 of the other (h2v2), or the sample (h2v1).
int column_sum(chroma_source const& s, int c) noexcept {
  c = std::clamp(c, 0, s.width - 1);
  return s.y_step == 2 ? 3 * s.near[c] + s.far[c] : s.near[c];
}

// Pixel column x's chroma: horizontally again 3/4 and 1/4, with libjpeg's biases (rounding up
// and down at alternate columns).
int chroma_at(chroma_source const& s, int x) noexcept {
  if (s.x_step == 1) return s.near[x];
  int const c = x / 2;
  int const shift = s.y_step == 2 ? 4 : 2;
  int const here = 3 * column_sum(s, c);
  if (x % 2 == 0) return (here + column_sum(s, c - 1) + (s.y_step == 2 ? 8 : 1)) >> shift;
  return (here + column_sum(s, c + 1) + (s.y_step == 2 ? 7 : 2)) >> shift;
}

// One output row: pixels [x0, x0 + width) of image row `row`.
struct row_job {
  std::uint8_t const* luma;  // the row's first pixel (x0)
  chroma_source cb;
  chroma_source cr;
  int x0;
  int width;
  bool mirror;
  bool room_after;  // the output goes on after this row (the next row's bytes)
  std::uint8_t* out;
};

void copy_row_portable(row_job const& j) noexcept {
  for (int x = 0; x < j.width; ++x) {
    int const to = j.mirror ? j.width - 1 - x : x;
    pixel_to_rgb(j.luma[x], chroma_at(j.cb, j.x0 + x), chroma_at(j.cr, j.x0 + x),
                 j.out + 3 * static_cast<std::size_t>(to));
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define GPUFEED_YCC_COPY_AVX2 1

// Per-thread scratch, grown to the widest row a thread has converted.
struct row_scratch {
  std::vector<std::int16_t> sums, cb, cr;
  std::vector<std::uint8_t> rgbx;
  void fit(int width) {
    auto const n = static_cast<std::size_t>(width) + 64;
    if (cb.size() < n) {
      sums.resize(n);
      cb.resize(n);
      cr.resize(n);
      rgbx.resize(4 * n);
    }
  }
};

[[gnu::target("avx2"), gnu::always_inline]] inline __m256i load16(std::int16_t const* p) noexcept {
  return _mm256_loadu_si256(reinterpret_cast<__m256i const*>(p));
}

// v + v * factor / 2^16, rounded as libjpeg rounds (see convert16).
[[gnu::target("avx2"), gnu::always_inline]] inline __m256i plus_fraction(
    __m256i v, __m128i doubling, std::int16_t factor) noexcept {
  __m256i const m = _mm256_mulhi_epi16(_mm256_sll_epi16(v, doubling), _mm256_set1_epi16(factor));
  return _mm256_add_epi16(v, _mm256_srai_epi16(_mm256_add_epi16(m, _mm256_set1_epi16(1)), 1));
}

// The green's fraction of 8 (Cb, Cr) pairs, in 32 bits.
[[gnu::target("avx2"), gnu::always_inline]] inline __m256i green_part(__m256i pairs) noexcept {
  __m256i const factors = _mm256_set1_epi32(
      static_cast<std::int32_t>((static_cast<std::uint32_t>(65536 - fix_0_714) << 16U) |
                                static_cast<std::uint16_t>(-fix_0_344)));
  return _mm256_srai_epi32(
      _mm256_add_epi32(_mm256_madd_epi16(pairs, factors), _mm256_set1_epi32(one_half)), scale_bits);
}

// chroma_at for pixels [x0, x0 + width), 16 samples a round, into `out` (width + 34 values, the
// last ones spare); `sums`: scratch for the column sums. Reads up to 16 samples past a row's
// last (a plane's rows are padded by more: jpeg_decode.cpp's layout_planes).
[[gnu::target("avx2")]] std::int16_t const* chroma_row_avx2(chroma_source const& s, int x0,
                                                            int width, std::int16_t* sums,
                                                            std::int16_t* out) noexcept {
  if (s.x_step == 1) {
    for (int i = 0; i < width; i += 16) {
      __m128i const v = _mm_loadu_si128(reinterpret_cast<__m128i const*>(s.near + x0 + i));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_cvtepu8_epi16(v));
    }
    return out;
  }
  int const c_lo = x0 / 2;
  int const c_hi = (x0 + width - 1) / 2;
  int const n = c_hi - c_lo + 3;  // sums[k]: column c_lo - 1 + k
  __m256i const three = _mm256_set1_epi16(3);
  for (int k = c_lo == 0 ? 1 : 0; k < n; k += 16) {
    std::size_t const c = static_cast<std::size_t>(c_lo - 1 + k);
    __m256i v = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<__m128i const*>(s.near + c)));
    if (s.y_step == 2) {
      __m256i const far =
          _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<__m128i const*>(s.far + c)));
      v = _mm256_add_epi16(_mm256_mullo_epi16(v, three), far);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(sums + k), v);
  }
  if (c_lo == 0) sums[0] = sums[1];                    // left of the image: its first column
  if (c_hi + 1 >= s.width) sums[n - 1] = sums[n - 2];  // right of it: its last
  __m128i const shift = _mm_cvtsi32_si128(s.y_step == 2 ? 4 : 2);
  __m256i const even_bias = _mm256_set1_epi16(static_cast<std::int16_t>(s.y_step == 2 ? 8 : 1));
  __m256i const odd_bias = _mm256_set1_epi16(static_cast<std::int16_t>(s.y_step == 2 ? 7 : 2));
  for (int k = 0; k < n - 2; k += 16) {
    __m256i const here = _mm256_mullo_epi16(load16(sums + k + 1), three);
    __m256i const even = _mm256_srl_epi16(
        _mm256_add_epi16(_mm256_add_epi16(here, load16(sums + k)), even_bias), shift);
    __m256i const odd = _mm256_srl_epi16(
        _mm256_add_epi16(_mm256_add_epi16(here, load16(sums + k + 2)), odd_bias), shift);
    // Interleaved even, odd: per 128-bit lane, then the lanes in order.
    __m256i const low = _mm256_unpacklo_epi16(even, odd);
    __m256i const high = _mm256_unpackhi_epi16(even, odd);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * k),
                        _mm256_permute2x128_si256(low, high, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * k + 16),
                        _mm256_permute2x128_si256(low, high, 0x31));
  }
  return out + (x0 - 2 * c_lo);
}

// pixel_to_rgb for 16 pixels in 16-bit lanes, the same integers: R's and B's factors over one
// split (1.402 = 1 + 26345 / 2^16; 1.772 = 1 + 2 * 25297 / 2^16), each product taken at twice
// its scale by pmulhw and halved with the rounding ((m + 1) >> 1 is exactly the + 1/2, >> 16 of
// the 32-bit product); G in 32 bits as libjpeg's SIMD code computes it (-0.71414 = 0.28586 - 1).
struct rgb16 {
  __m256i red, green, blue;
};

[[gnu::target("avx2"), gnu::always_inline]] inline rgb16 convert16(std::uint8_t const* y,
                                                                   std::int16_t const* cb,
                                                                   std::int16_t const* cr) {
  __m256i const center = _mm256_set1_epi16(128);
  __m256i const luma = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<__m128i const*>(y)));
  __m256i const b = _mm256_sub_epi16(load16(cb), center);
  __m256i const r = _mm256_sub_epi16(load16(cr), center);
  __m256i const red =
      _mm256_add_epi16(luma, plus_fraction(r, _mm_cvtsi32_si128(1), fix_1_402 - 65536));
  __m256i const blue =
      _mm256_add_epi16(luma, plus_fraction(b, _mm_cvtsi32_si128(2), (fix_1_772 - 65536) / 2));
  __m256i const g = _mm256_packs_epi32(green_part(_mm256_unpacklo_epi16(b, r)),
                                       green_part(_mm256_unpackhi_epi16(b, r)));
  return {red, _mm256_add_epi16(luma, _mm256_sub_epi16(g, r)), blue};
}

[[gnu::target("avx2")]] void copy_row_avx2(row_job const& j, row_scratch& scratch) noexcept {
  std::int16_t const* const cb =
      chroma_row_avx2(j.cb, j.x0, j.width, scratch.sums.data(), scratch.cb.data());
  std::int16_t const* const cr =
      chroma_row_avx2(j.cr, j.x0, j.width, scratch.sums.data(), scratch.cr.data());
  int x = 0;
  if (!j.mirror) {
    int const spare = j.room_after ? 0 : 3;  // the last store writes 8 bytes past its 48
    for (; x + 16 + spare <= j.width; x += 16) {
      rgb16 const p = convert16(j.luma + x, cb + x, cr + x);
      store_rgb16(p.red, p.green, p.blue, j.out + 3 * static_cast<std::size_t>(x));
    }
    for (; x < j.width; ++x) {
      pixel_to_rgb(j.luma[x], cb[x], cr[x], j.out + 3 * static_cast<std::size_t>(x));
    }
    return;
  }
  // Mirrored: RGBX first, then turned around and packed by the resampler's row copy.
  std::uint8_t* const rgbx = scratch.rgbx.data();
  for (; x + 16 <= j.width; x += 16) {
    rgb16 const p = convert16(j.luma + x, cb + x, cr + x);
    __m256i const rg = _mm256_packus_epi16(p.red, p.green);  // per lane: R x 8, G x 8
    __m256i const bz = _mm256_packus_epi16(p.blue, _mm256_setzero_si256());
    __m256i const rb = _mm256_unpacklo_epi8(rg, bz);      // R B R B ...
    __m256i const gz = _mm256_unpackhi_epi8(rg, bz);      // G 0 G 0 ...
    __m256i const first = _mm256_unpacklo_epi8(rb, gz);   // pixels 0-3 | 8-11
    __m256i const second = _mm256_unpackhi_epi8(rb, gz);  // pixels 4-7 | 12-15
    auto* const to = reinterpret_cast<__m256i*>(rgbx + 4 * static_cast<std::size_t>(x));
    _mm256_storeu_si256(to, _mm256_permute2x128_si256(first, second, 0x20));
    _mm256_storeu_si256(to + 1, _mm256_permute2x128_si256(first, second, 0x31));
  }
  for (; x < j.width; ++x) {
    pixel_to_rgb(j.luma[x], cb[x], cr[x], rgbx + 4 * static_cast<std::size_t>(x));
  }
  rgbx_row_to_rgb(rgbx, j.width, true, j.out);
}

#endif

}  // namespace

std::pair<int, int> copy_samples_read(int from, int to, int step, int size) noexcept {
  if (step == 1) return {from, to};
  int const last = to - 1;
  return {std::max(from / 2 - (from % 2 == 0 ? 1 : 0), 0), std::min(last / 2 + last % 2 + 1, size)};
}

bool ycc_copy_supported(ycc_view const& source) noexcept {
  auto const takes = [](plane_view const& p) {
    return (p.x_step == 1 && p.y_step == 1) || (p.x_step == 2 && p.y_step <= 2 && p.width > 2);
  };
  auto const same = [](plane_view const& a, plane_view const& b) {
    return a.width == b.width && a.height == b.height && a.x_step == b.x_step &&
           a.y_step == b.y_step;
  };
  return source.y.x_step == 1 && source.y.y_step == 1 && takes(source.cb) &&
         same(source.cb, source.cr);
}

void copy_ycc_to_rgb(ycc_view const& source, int x, int y, std::span<std::uint8_t> out,
                     int out_width, int out_height, bool mirror) {
  GPUFEED_EXPECTS(ycc_copy_supported(source), "copy_ycc_to_rgb: planes it does not convert");
  GPUFEED_EXPECTS(out_width > 0 && out_height > 0 &&
                      out.size() == 3 * static_cast<std::size_t>(out_width) *
                                        static_cast<std::size_t>(out_height),
                  "copy_ycc_to_rgb: the output has the wrong size");
  GPUFEED_EXPECTS(
      x >= 0 && y >= 0 && out_width <= source.width - x && out_height <= source.height - y,
      "copy_ycc_to_rgb: the area " + std::to_string(out_width) + "x" + std::to_string(out_height) +
          " at " + std::to_string(x) + "," + std::to_string(y) + " is not inside the " +
          std::to_string(source.width) + "x" + std::to_string(source.height) + " image");
  auto const [chroma_x0, chroma_x1] =
      copy_samples_read(x, x + out_width, source.cb.x_step, source.cb.width);
  auto const [chroma_y0, chroma_y1] =
      copy_samples_read(y, y + out_height, source.cb.y_step, source.cb.height);
  auto const& d = source.decoded;
  GPUFEED_EXPECTS(samples_decoded(source.y, d, x, y, x + out_width, y + out_height) &&
                      samples_decoded(source.cb, d, chroma_x0, chroma_y0, chroma_x1, chroma_y1),
                  "copy_ycc_to_rgb: the area " + std::to_string(out_width) + "x" +
                      std::to_string(out_height) + " at " + std::to_string(x) + "," +
                      std::to_string(y) +
                      " and its chroma context need samples outside those decoded (" +
                      std::to_string(d.width) + "x" + std::to_string(d.height) + " at " +
                      std::to_string(d.x) + "," + std::to_string(d.y) + ")");
#if defined(GPUFEED_YCC_COPY_AVX2)
  bool const fast = avx2_kernels_in_use();
  thread_local row_scratch scratch;
  if (fast) scratch.fit(out_width);
#endif
  auto const row_bytes = 3 * static_cast<std::size_t>(out_width);
  for (int r = 0; r < out_height; ++r) {
    int const row = y + r;
    row_job const job{source.y.data + static_cast<std::size_t>(row) * source.y.stride +
                          static_cast<std::size_t>(x),
                      chroma_rows(source.cb, row),
                      chroma_rows(source.cr, row),
                      x,
                      out_width,
                      mirror,
                      r + 1 < out_height,
                      out.data() + row_bytes * static_cast<std::size_t>(r)};
#if defined(GPUFEED_YCC_COPY_AVX2)
    if (fast) {
      copy_row_avx2(job, scratch);
      continue;
    }
#endif
    copy_row_portable(job);
  }
}

}  // namespace gpufeed::detail
