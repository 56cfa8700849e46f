#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "../image_rgb_store.hpp"
#include "image_resample.hpp"

namespace gpufeed::detail::resample {

#if defined(__x86_64__) && defined(__GNUC__)

namespace {

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

}  // namespace

kernels const* avx2_kernels() noexcept {
  static kernels const table{filter_pass_avx2<std::int16_t, 4>,
                             filter_pass_avx2<std::uint8_t, 4>,
                             filter_pass_avx2<std::int16_t, 1>,
                             filter_pass_avx2<std::uint8_t, 1>,
                             narrow_avx2,
                             copy_row_avx2,
                             ycc_to_rgb_avx2};
  __builtin_cpu_init();  // this may run during static initialization
  return __builtin_cpu_supports("avx2") ? &table : nullptr;
}

#else

kernels const* avx2_kernels() noexcept {
  return nullptr;
}

#endif

}  // namespace gpufeed::detail::resample
