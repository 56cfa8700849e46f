// The image datasets' colour jitter operations (fixed point, vectorized) against plain
// double-precision references of torchvision's ColorJitter formulas: within one grey level, on
// random pixels, at factors from 0 to beyond the range of the int32 loops; factor 1 changes
// nothing.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "image/jitter/image_jitter.hpp"

namespace {

using pixels = std::vector<std::uint8_t>;

pixels random_pixels(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng{seed};
  std::uniform_int_distribution<int> value{0, 255};
  pixels p(count * 3);
  for (auto& v : p) v = static_cast<std::uint8_t>(value(rng));
  // The extremes too: black, white, pure primaries.
  std::vector<std::uint8_t> const edges{0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 255, 0, 0, 0, 255};
  std::copy(edges.begin(), edges.end(), p.begin());
  return p;
}

std::uint8_t round_clamp(double v) {
  return static_cast<std::uint8_t>(std::clamp(std::lround(v), 0L, 255L));
}

double luma(std::uint8_t const* p) {
  return 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
}

int max_difference(pixels const& a, pixels const& b) {
  int worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

std::vector<double> const factors{0.0, 0.25, 0.6, 0.999, 1.0, 1.2, 1.4, 3.9, 9.5, 63.0, 70.0};

TEST(ImageJitter, SaturationIsWithinOneLevelOfTheExactBlend) {
  pixels const source = random_pixels(5000, 1);
  for (double f : factors) {
    pixels expected = source;
    for (std::size_t i = 0; i < expected.size(); i += 3) {
      double const gray = (1 - f) * luma(source.data() + i);
      for (std::size_t c = 0; c < 3; ++c) expected[i + c] = round_clamp(f * source[i + c] + gray);
    }
    pixels got = source;
    gpufeed::detail::adjust_saturation(got, f);
    EXPECT_LE(max_difference(got, expected), 1) << "factor " << f;
    if (f == 1.0) {
      EXPECT_EQ(got, source) << "factor 1 must change nothing";
    }
  }
}

TEST(ImageJitter, ContrastBlendsWithTheMeanLuma) {
  pixels const source = random_pixels(5000, 2);
  double sum = 0;
  for (std::size_t i = 0; i < source.size(); i += 3) sum += luma(source.data() + i);
  double const mean = sum / static_cast<double>(source.size() / 3);
  for (double f : factors) {
    pixels expected = source;
    for (auto& v : expected) v = round_clamp(f * v + (1 - f) * mean);
    pixels got = source;
    gpufeed::detail::adjust_contrast(got, f);
    EXPECT_LE(max_difference(got, expected), 1) << "factor " << f;
  }
}

TEST(ImageJitter, BrightnessScalesEachValue) {
  pixels const source = random_pixels(5000, 3);
  for (double f : factors) {
    pixels expected = source;
    for (auto& v : expected) v = round_clamp(f * v);
    pixels got = source;
    gpufeed::detail::adjust_brightness(got, f);
    EXPECT_LE(max_difference(got, expected), 1) << "factor " << f;
    if (f == 1.0) {
      EXPECT_EQ(got, source) << "factor 1 must change nothing";
    }
  }
}

}  // namespace
