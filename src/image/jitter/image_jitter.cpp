#include "image/jitter/image_jitter.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

// The loops below are written for the compiler to vectorize (src/CMakeLists.txt turns GCC's
// vectorizer fully on for this file); on x86-64 an AVX2 clone is chosen at load time where the CPU
// has it. Integer arithmetic only, so every clone gives the same pixels. Not in sanitizer builds:
// their runtimes may not be set up yet when the loader runs the clones' ifunc resolvers.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define GPUFEED_JITTER_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GPUFEED_JITTER_SANITIZED 1
#endif
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__)) && \
    !defined(GPUFEED_JITTER_SANITIZED)
#define GPUFEED_JITTER_CLONES [[gnu::target_clones("avx2", "default")]]
#else
#define GPUFEED_JITTER_CLONES
#endif

namespace gpufeed::detail {

namespace {

// Luma weights in 14-bit fixed point (0.299, 0.587, 0.114 times 2^14, summing to 2^14).
constexpr std::int32_t luma_r = 4899;
constexpr std::int32_t luma_g = 9617;
constexpr std::int32_t luma_b = 1868;
static_assert(luma_r + luma_g + luma_b == 1 << 14);

// Factors are in 12-bit fixed point. Up to these the int32 loops cannot overflow; beyond them
// the plain int64 loops run. affine: |f| 2^12 2^8 and |1 - f| 2^12 2^8 stay under 2^30 for f up
// to 256, and the limit keeps a margin at 64; blend_with_luma (values with 8 fraction bits):
// |f| 2^12 2^16 and |1 - f| 2^12 2^16 each under 2^30 for f up to 4.
constexpr double affine_int32_limit = 64.0;
constexpr double blend_int32_limit = 4.0;

// v -> clamp(round((scale v + offset) / 2^12)), scale and offset in 12-bit fixed point, in
// `Int` (int32 up to the limits above, where it vectorizes; int64 past them). Inlined into the
// entry points below, so that each clone of those gets its own vectorized copy.
template <class Int>
[[gnu::always_inline]] inline void affine_loop(std::uint8_t* p, std::size_t n, Int scale,
                                               Int offset) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    Int const x = (scale * p[i] + offset + 2048) >> 12;  // NOLINT(hicpp-signed-bitwise)
    p[i] = static_cast<std::uint8_t>(std::clamp<Int>(x, 0, 255));
  }
}

// f v + (1 - f) luma per pixel: f with 12 fraction bits, v and luma with 8, the sum with 20,
// rounded half up by the shift; in `Int` as affine_loop.
template <class Int>
[[gnu::always_inline]] inline void blend_loop(std::uint8_t* p, std::size_t pixels,
                                              Int fq) noexcept {
  Int const gq = 4096 - fq;
  for (std::size_t i = 0; i < pixels; ++i, p += 3) {
    Int const luma8 = (luma_r * p[0] + luma_g * p[1] + luma_b * p[2] + 32) >> 6;
    Int const gray = gq * luma8 + (Int{1} << 19);
    // Three statements, not a loop over c: GCC vectorizes these (an inner loop it does not).
    Int const r = (fq * (Int{p[0]} << 8) + gray) >> 20;  // NOLINT(hicpp-signed-bitwise)
    Int const g = (fq * (Int{p[1]} << 8) + gray) >> 20;  // NOLINT(hicpp-signed-bitwise)
    Int const b = (fq * (Int{p[2]} << 8) + gray) >> 20;  // NOLINT(hicpp-signed-bitwise)
    p[0] = static_cast<std::uint8_t>(std::clamp<Int>(r, 0, 255));
    p[1] = static_cast<std::uint8_t>(std::clamp<Int>(g, 0, 255));
    p[2] = static_cast<std::uint8_t>(std::clamp<Int>(b, 0, 255));
  }
}

GPUFEED_JITTER_CLONES void affine_int32(std::uint8_t* p, std::size_t n, std::int32_t scale,
                                        std::int32_t offset) noexcept {
  affine_loop(p, n, scale, offset);
}

GPUFEED_JITTER_CLONES void blend_with_luma_int32(std::uint8_t* p, std::size_t pixels,
                                                 std::int32_t fq) noexcept {
  blend_loop(p, pixels, fq);
}

GPUFEED_JITTER_CLONES std::uint64_t luma_sum(std::uint8_t const* p, std::size_t pixels) noexcept {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < pixels; ++i, p += 3) {
    sum += static_cast<std::uint32_t>(luma_r * p[0] + luma_g * p[1] + luma_b * p[2]);
  }
  return sum;
}

// factor v + (1 - factor) mean, rounded and clamped.
void affine(std::span<std::uint8_t> image, double factor, double mean) noexcept {
  double const f = std::clamp(factor, 0.0, 1e6);
  auto const scale = std::llround(f * 4096.0);
  auto const offset = std::llround((1.0 - f) * mean * 4096.0);
  if (f <= affine_int32_limit) {
    affine_int32(image.data(), image.size(), static_cast<std::int32_t>(scale),
                 static_cast<std::int32_t>(offset));
  } else {
    affine_loop<std::int64_t>(image.data(), image.size(), scale, offset);  // rare: not cloned
  }
}

}  // namespace

void adjust_brightness(std::span<std::uint8_t> rgb, double factor) noexcept {
  affine(rgb, factor, 0.0);
}

void adjust_contrast(std::span<std::uint8_t> rgb, double factor) noexcept {
  std::size_t const pixels = rgb.size() / 3;
  double const mean = pixels > 0 ? static_cast<double>(luma_sum(rgb.data(), pixels)) /
                                       (static_cast<double>(pixels) * (1 << 14))
                                 : 0;
  affine(rgb, factor, mean);
}

void adjust_saturation(std::span<std::uint8_t> rgb, double factor) noexcept {
  double const f = std::clamp(factor, 0.0, 1e6);
  auto const fq = std::llround(f * 4096.0);
  if (f <= blend_int32_limit) {
    blend_with_luma_int32(rgb.data(), rgb.size() / 3, static_cast<std::int32_t>(fq));
  } else {
    blend_loop<std::int64_t>(rgb.data(), rgb.size() / 3, fq);  // rare: not cloned
  }
}

}  // namespace gpufeed::detail
