#pragma once
// AVX2 helpers shared by the image kernels (image_resample_avx2.cpp, image_ycc_copy.cpp): bytes of
// eight R, G and B values interleaved into RGB. Internal to src/image.

#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace gpufeed::detail {

// rg = R0..R7 G0..G7 and bz = B0..B7 (then zeros) -> 24 bytes of RGB at `dst` (the second
// 16-byte store writes 8 bytes more, written over later).
[[gnu::target("avx2"), gnu::always_inline]] inline void store_rgb_lane(__m128i rg, __m128i bz,
                                                                       std::uint8_t* dst) noexcept {
  __m128i const rg_first = _mm_setr_epi8(0, 8, -1, 1, 9, -1, 2, 10, -1, 3, 11, -1, 4, 12, -1, 5);
  __m128i const b_first = _mm_setr_epi8(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1);
  __m128i const rg_last =
      _mm_setr_epi8(13, -1, 6, 14, -1, 7, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  __m128i const b_last = _mm_setr_epi8(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, -1, -1, -1, -1, -1, -1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst),
                   _mm_or_si128(_mm_shuffle_epi8(rg, rg_first), _mm_shuffle_epi8(bz, b_first)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16),
                   _mm_or_si128(_mm_shuffle_epi8(rg, rg_last), _mm_shuffle_epi8(bz, b_last)));
}

// 16 pixels' R, G and B (int16, clamped to bytes here) -> 48 bytes of RGB at `dst`; the last
// store reaches 8 bytes further (written over later, or room the caller keeps).
[[gnu::target("avx2"), gnu::always_inline]] inline void store_rgb16(__m256i red, __m256i green,
                                                                    __m256i blue,
                                                                    std::uint8_t* dst) noexcept {
  __m256i const rg = _mm256_packus_epi16(red, green);  // per lane: R x 8, G x 8
  __m256i const bz = _mm256_packus_epi16(blue, _mm256_setzero_si256());
  store_rgb_lane(_mm256_castsi256_si128(rg), _mm256_castsi256_si128(bz), dst);
  store_rgb_lane(_mm256_extracti128_si256(rg, 1), _mm256_extracti128_si256(bz, 1), dst + 24);
}

}  // namespace gpufeed::detail
#endif
