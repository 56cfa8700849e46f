#pragma once
// The separable resampler's parts shared by its kernels (image_resize.cpp chooses them): the Q7
// arithmetic, the filter taps of an axis, where a pass writes its turned output, the portable
// row conversions the AVX2 kernels finish their rows with, and the table of kernels. Internal
// to src/datasets.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpufeed::detail::resample {

// Pixel values travel between the passes as int16 with 7 fraction bits (Q7: 255 -> 32640);
// weights are Q15. One step of a pass is x * w rounded back to Q7, SSSE3's pmulhrsw:
// (x * w + 2^14) >> 15, exact in 32 bits. The weights of an output sum to 2^15, so sums stay
// within int16 and the rounding error of a pass is below 1/32 of a grey level.
inline constexpr int q7_bits = 7;
inline constexpr int weight_bits = 15;
inline constexpr int weight_one = 1 << weight_bits;
inline constexpr std::int16_t weight_max = 32767;  // 1.0 itself is a copy (see filter_rows)
// Padding after each RGBX row (the decoder's buffers keep a spare row as well).
inline constexpr std::size_t row_padding = 16;
// Where RGBX rows start: 8 bytes past a cache line, never on a 16-byte boundary. libjpeg-turbo's
// SIMD colour conversion, which writes the decoder's rows, stores a row that starts on a 16-byte
// (SSE2) or 32-byte (AVX2) boundary with non-temporal stores, past the cache: such rows cost a
// third more to decode and are read back from memory (gpufeed-bench decode).
inline constexpr std::size_t row_alignment = 64;
inline constexpr std::size_t row_offset = 8;

template <class T>
inline T round_up(T n, T m) noexcept {
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

// floor() without the library call that baseline x86-64 makes of std::floor.
inline int floor_int(double x) noexcept {
  auto const i = static_cast<int>(x);
  return i - (x < i ? 1 : 0);
}

// PIL's BILINEAR resampling (torchvision's antialias=True) of one axis into `a`: output i
// samples the window at `start + (i + 0.5) * scale` with a triangle of half-width max(scale, 1),
// over the inputs it reaches, normalised; `window` inputs exist. Kept when the geometry is the
// one `a` was made for.
void make_taps(axis_taps& a, double start, double length, int window, int outputs);

inline std::int16_t step(std::int16_t x, std::int16_t w) noexcept {  // pmulhrsw
  return static_cast<std::int16_t>((x * w + (1 << 14)) >> 15);
}

// A row value in Q7: int16 rows hold Q7 already; byte rows (the source's pixels or samples) are
// widened as they are read, so that the first pass needs no widened copy of the source.
inline std::int16_t q7(std::int16_t v) noexcept {
  return v;
}
inline std::int16_t q7(std::uint8_t v) noexcept {
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
inline std::int16_t* row_start(pass_output const& out, int j, int rows) noexcept {
  return out.data + Group * static_cast<std::size_t>(out.mirror ? rows - 1 - j : j);
}

// Value i of an output row that starts at `dst` (row_start).
template <int Group>
inline std::int16_t& value_at(std::int16_t* dst, std::size_t i, std::size_t stride) noexcept {
  return dst[i / Group * stride + i % Group];
}

inline std::uint8_t narrow(std::int16_t v) noexcept {
  return static_cast<std::uint8_t>(std::clamp((v + (1 << (q7_bits - 1))) >> q7_bits, 0, 255));
}

// Q7 RGBX pixels -> RGB bytes, [from, pixels).
inline void narrow_portable(std::int16_t const* in, std::size_t from, std::size_t pixels,
                            std::uint8_t* out) noexcept {
  for (std::size_t p = from; p < pixels; ++p) {
    out[3 * p] = narrow(in[4 * p]);
    out[3 * p + 1] = narrow(in[4 * p + 1]);
    out[3 * p + 2] = narrow(in[4 * p + 2]);
  }
}

// RGBX pixels -> RGB bytes, pixels [from, width) of the output row, mirrored if asked.
inline void copy_row_portable(std::uint8_t const* src, int from, int width, bool mirror,
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
inline constexpr std::int16_t chroma_zero = 128 << q7_bits;
inline constexpr std::int16_t k_r = 13173;   // 0.402 (of 1.402)
inline constexpr std::int16_t k_gb = 11277;  // 0.34414
inline constexpr std::int16_t k_gr = 23401;  // 0.71414
inline constexpr std::int16_t k_b = 25297;   // 0.772 (of 1.772)

inline std::int16_t saturated(int v) noexcept {
  return static_cast<std::int16_t>(std::clamp(v, -32768, 32767));
}

// Pixels [from, count) of the three planes -> RGB bytes.
inline void ycc_to_rgb_portable(std::int16_t const* y, std::int16_t const* cb,
                                std::int16_t const* cr, std::size_t from, std::size_t count,
                                std::uint8_t* out) noexcept {
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

// The kernels in plain C++, for any CPU.
kernels const& portable_kernels() noexcept;

// The AVX2 kernels where this build has them and the CPU runs them; else nullptr.
kernels const* avx2_kernels() noexcept;

}  // namespace gpufeed::detail::resample
