// The hue jitter and its colour conversions (hsv.hpp). This file is compiled without
// floating-point contraction (src/CMakeLists.txt): fusing a product into a later sum would change
// the rounding the HSV-to-RGB path is matched to.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "image/jitter/hsv.hpp"
#include "image/jitter/image_jitter.hpp"

namespace gpufeed::detail {

namespace {

constexpr int hsv_shift = 12;  // fraction bits of the division tables
constexpr int hsv_half = 1 << (hsv_shift - 1);

// Divisions by V (saturation) and by the spread max - min (hue) as 12-bit fixed-point
// reciprocals, so that RGB to HSV is all integer: S = spread 255 / V, H = h6 256 / (6 spread),
// where h6 is the hue in sixths of a turn times the spread.
struct hsv_tables {
  std::array<std::int32_t, 256> saturation{};
  std::array<std::int32_t, 256> hue{};
  // For each 8-bit hue on the way back: the sector of the turn (0..5) and the position in it.
  std::array<std::uint8_t, 256> sector{};
  std::array<float, 256> rise{};  // position in the sector, 0 .. 1
  std::array<float, 256> fall{};  // 1 - rise, as float arithmetic rounds it

  hsv_tables() noexcept {
    for (int i = 1; i < 256; ++i) {
      saturation[static_cast<std::size_t>(i)] =
          static_cast<std::int32_t>(std::lround((255 << hsv_shift) / static_cast<double>(i)));
      hue[static_cast<std::size_t>(i)] =
          static_cast<std::int32_t>(std::lround((256 << hsv_shift) / (6.0 * i)));
    }
    // The way back reads the hue over 255 steps (255 is a full turn, the same as 0), so that
    // 255 is red again; OpenCV's 8-bit HSV-to-RGB does the same.
    for (int h = 0; h < 256; ++h) {
      float const turn = static_cast<float>(h) * (6.0F / 255.0F);
      auto const whole = static_cast<int>(turn);  // truncated, then taken modulo 6
      float const part = turn - static_cast<float>(whole);
      sector[static_cast<std::size_t>(h)] = static_cast<std::uint8_t>(whole % 6);
      rise[static_cast<std::size_t>(h)] = part;
      fall[static_cast<std::size_t>(h)] = 1.0F - part;
    }
  }
};

hsv_tables const& tables() noexcept {
  static hsv_tables const t;
  return t;
}

struct hsv_pixel {
  int h;
  int s;
  int v;
};

inline hsv_pixel to_hsv(int r, int g, int b, hsv_tables const& t) noexcept {
  int const v = std::max({r, g, b});
  int const spread = v - std::min({r, g, b});
  int const s =
      (spread * t.saturation[static_cast<std::size_t>(v)] + hsv_half) >> hsv_shift;  // NOLINT
  // The hue in sixths of a turn, times the spread: red's sector, green's, or blue's.
  int const h6 = v == r ? g - b : v == g ? b - r + 2 * spread : r - g + 4 * spread;
  int h = (h6 * t.hue[static_cast<std::size_t>(spread)] + hsv_half) >> hsv_shift;  // NOLINT
  if (h < 0) h += 256;
  return {std::min(h, 255), s, v};
}

// v (1 - s x) in single precision as a fused multiply-add rounds it: s x is exact in double and
// so is 1 - s x before the one rounding to float.
inline float shade(float v, float s, float x) noexcept {
  return v * static_cast<float>(1.0 - static_cast<double>(s) * static_cast<double>(x));
}

inline int level(float unit) noexcept {
  return std::min(static_cast<int>(unit * 255.0F), 255);  // truncated
}

inline void to_rgb(int h, int s8, int v8, hsv_tables const& t, std::uint8_t* out) noexcept {
  float const s = static_cast<float>(s8) * (1.0F / 255.0F);
  float const v = static_cast<float>(v8) * (1.0F / 255.0F);
  auto const hi = static_cast<std::size_t>(h);
  // The four values a sector chooses from: the top, the bottom, falling and rising.
  std::array<int, 4> const value{level(v), level(v * (1.0F - s)), level(shade(v, s, t.rise[hi])),
                                 level(shade(v, s, t.fall[hi]))};
  // Per sector, which of them R, G and B take.
  static constexpr std::array<std::array<std::uint8_t, 3>, 6> pick{
      {{0, 3, 1}, {2, 0, 1}, {1, 0, 3}, {1, 2, 0}, {3, 1, 0}, {0, 1, 2}}};
  auto const& p = pick[t.sector[hi]];
  out[0] = static_cast<std::uint8_t>(value[p[0]]);
  out[1] = static_cast<std::uint8_t>(value[p[1]]);
  out[2] = static_cast<std::uint8_t>(value[p[2]]);
}

}  // namespace

void rgb_to_hsv_full(std::span<std::uint8_t const> rgb, std::span<std::uint8_t> hsv) noexcept {
  auto const& t = tables();
  std::size_t const n = std::min(rgb.size(), hsv.size()) / 3 * 3;
  for (std::size_t i = 0; i < n; i += 3) {
    hsv_pixel const p = to_hsv(rgb[i], rgb[i + 1], rgb[i + 2], t);
    hsv[i] = static_cast<std::uint8_t>(p.h);
    hsv[i + 1] = static_cast<std::uint8_t>(p.s);
    hsv[i + 2] = static_cast<std::uint8_t>(p.v);
  }
}

void hsv_full_to_rgb(std::span<std::uint8_t const> hsv, std::span<std::uint8_t> rgb) noexcept {
  auto const& t = tables();
  std::size_t const n = std::min(rgb.size(), hsv.size()) / 3 * 3;
  for (std::size_t i = 0; i < n; i += 3) {
    int const h = hsv[i];
    int const s = hsv[i + 1];
    int const v = hsv[i + 2];
    to_rgb(h, s, v, t, rgb.data() + i);
  }
}

void adjust_hue(std::span<std::uint8_t> rgb, double shift) noexcept {
  auto const& t = tables();
  auto const delta = static_cast<int>(std::lround(shift * 256.0));
  for (std::size_t i = 0; i + 3 <= rgb.size(); i += 3) {
    hsv_pixel const p = to_hsv(rgb[i], rgb[i + 1], rgb[i + 2], t);
    to_rgb((p.h + delta + 256) & 0xFF, p.s, p.v, t, rgb.data() + i);  // NOLINT
  }
}

}  // namespace gpufeed::detail
