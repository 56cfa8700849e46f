// The hue jitter's 8-bit HSV (image/jitter/hsv.hpp): against a double-precision reference over
// every input, and, where OpenCV is built in, against cvtColor's COLOR_RGB2HSV_FULL and
// COLOR_HSV2RGB_FULL, which it replaces.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "image/jitter/hsv.hpp"
#include "image/jitter/image_jitter.hpp"
#if GPUFEED_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace {

using gpufeed::detail::adjust_hue;
using gpufeed::detail::hsv_full_to_rgb;
using gpufeed::detail::rgb_to_hsv_full;
using bytes = std::vector<std::uint8_t>;

// Every 8-bit triple once: (a, b, c) for a, b, c in 0..255, as 256 rows of 65536 pixels.
bytes every_triple() {
  bytes out(std::size_t{3} << 24U);
  for (std::uint32_t i = 0; i < (1U << 24U); ++i) {
    out[3 * std::size_t{i}] = static_cast<std::uint8_t>(i & 0xFFU);
    out[3 * std::size_t{i} + 1] = static_cast<std::uint8_t>((i >> 8U) & 0xFFU);
    out[3 * std::size_t{i} + 2] = static_cast<std::uint8_t>(i >> 16U);
  }
  return out;
}

TEST(image_hue_test, PrimariesAndGreys) {
  bytes const rgb{255, 0, 0, 0, 255, 0, 0, 0, 255, 128, 128, 128, 0, 0, 0};
  bytes hsv(rgb.size());
  rgb_to_hsv_full(rgb, hsv);
  // Green and blue at a third and two thirds of 256 steps, rounded down by the fixed point.
  EXPECT_EQ(hsv, (bytes{0, 255, 255, 85, 255, 255, 171, 255, 255, 0, 0, 128, 0, 0, 0}));
  bytes back(rgb.size());
  hsv_full_to_rgb(hsv, back);
  // Blue's hue, 171 of 256 steps, read back over 255 steps is a little past blue (as OpenCV's).
  EXPECT_EQ(back, (bytes{255, 0, 0, 0, 255, 0, 6, 0, 255, 128, 128, 128, 0, 0, 0}));
}

TEST(image_hue_test, RgbToHsvMatchesTheDefinition) {
  bytes const rgb = every_triple();
  bytes hsv(rgb.size());
  rgb_to_hsv_full(rgb, hsv);
  std::size_t off = 0;
  for (std::size_t i = 0; i < rgb.size(); i += 3) {
    double const r = rgb[i];
    double const g = rgb[i + 1];
    double const b = rgb[i + 2];
    double const v = std::max({r, g, b});
    double const spread = v - std::min({r, g, b});
    double h = 0;
    if (spread > 0) {
      h = v == r ? (g - b) / spread : v == g ? 2 + (b - r) / spread : 4 + (r - g) / spread;
      h = h * 256.0 / 6.0;
      if (h < 0) h += 256;
    }
    double const s = v > 0 ? 255.0 * spread / v : 0;
    // Fixed point with 12 fraction bits: within one step of the rounded exact value (hue on the
    // circle).
    int const dh = std::abs(static_cast<int>(std::lround(h)) % 256 - hsv[i]);
    bool const hue_ok = std::min(dh, 256 - dh) <= 1;
    bool const rest_ok = std::abs(std::lround(s) - hsv[i + 1]) <= 1 && hsv[i + 2] == v;
    if (!hue_ok || !rest_ok) ++off;
  }
  EXPECT_EQ(off, 0U);
}

// The way back truncates single-precision values: within one level of the exact value,
// truncated, with the hue read over 255 steps.
TEST(image_hue_test, HsvToRgbMatchesTheDefinition) {
  bytes const hsv = every_triple();
  bytes rgb(hsv.size());
  hsv_full_to_rgb(hsv, rgb);
  std::size_t off = 0;
  for (std::size_t i = 0; i < hsv.size(); i += 3) {
    double const turn = hsv[i] * 6.0 / 255.0;
    int const sector = static_cast<int>(turn) % 6;
    double const f = turn - std::floor(turn);
    double const s = hsv[i + 1] / 255.0;
    double const v = hsv[i + 2] / 255.0;
    std::array<double, 4> const t{v, v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))};
    static constexpr std::array<std::array<std::size_t, 3>, 6> pick{
        {{0, 3, 1}, {2, 0, 1}, {1, 0, 3}, {1, 2, 0}, {3, 1, 0}, {0, 1, 2}}};
    for (std::size_t c = 0; c < 3; ++c) {
      double const exact = std::floor(t[pick[static_cast<std::size_t>(sector)][c]] * 255.0 + 1e-9);
      if (std::abs(exact - rgb[i + c]) > 1) ++off;
    }
  }
  EXPECT_EQ(off, 0U);
}

TEST(image_hue_test, AThirdOfATurnTakesRedToGreen) {
  bytes rgb{255, 0, 0, 200, 40, 40};
  adjust_hue(rgb, 85.0 / 256.0);
  EXPECT_EQ(rgb[0], 0);
  EXPECT_EQ(rgb[1], 255);
  EXPECT_EQ(rgb[2], 0);
  EXPECT_LT(rgb[3], rgb[4]);  // the dull red went green too
  EXPECT_GT(rgb[4], rgb[5]);
}

#if GPUFEED_WITH_OPENCV

bytes random_image(std::size_t pixels, unsigned seed) {
  std::mt19937 rng{seed};
  std::uniform_int_distribution<int> byte{0, 255};
  bytes out(pixels * 3);
  for (auto& v : out) v = static_cast<std::uint8_t>(byte(rng));
  return out;
}

// OpenCV's HSV-to-RGB truncates in its vector loop and rounds in the scalar loop that finishes
// each row; the vector loop covers all but width % 32 pixels of a row where the CPU has AVX2 (and
// with it FMA), which this conversion is matched to.
bool opencv_uses_avx2() {
  return cv::checkHardwareSupport(CV_CPU_AVX2) && cv::checkHardwareSupport(CV_CPU_FMA3);
}

TEST(image_hue_test, RgbToHsvIsOpenCvs) {
  bytes const rgb = every_triple();
  cv::Mat const image(256, 65536, CV_8UC3, const_cast<std::uint8_t*>(rgb.data()));  // NOLINT
  cv::Mat theirs;
  cv::cvtColor(image, theirs, cv::COLOR_RGB2HSV_FULL);
  bytes ours(rgb.size());
  rgb_to_hsv_full(rgb, ours);
  EXPECT_TRUE(std::equal(ours.begin(), ours.end(), theirs.data));
}

TEST(image_hue_test, HsvToRgbIsOpenCvs) {
  if (!opencv_uses_avx2()) GTEST_SKIP() << "this CPU has no AVX2: OpenCV takes other paths";
  bytes const hsv = every_triple();
  cv::Mat const image(256, 65536, CV_8UC3, const_cast<std::uint8_t*>(hsv.data()));  // NOLINT
  cv::Mat theirs;
  cv::cvtColor(image, theirs, cv::COLOR_HSV2RGB_FULL);
  bytes ours(hsv.size());
  hsv_full_to_rgb(hsv, ours);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) differ += ours[i] != theirs.data[i] ? 1U : 0U;
  EXPECT_EQ(differ, 0U);
}

// The jitter as it was, through OpenCV.
void opencv_hue(bytes& rgb, int height, int width, double shift) {
  cv::Mat image(height, width, CV_8UC3, rgb.data());
  cv::Mat hsv;
  cv::cvtColor(image, hsv, cv::COLOR_RGB2HSV_FULL);
  auto const delta = static_cast<int>(std::lround(shift * 256.0));
  for (auto& p : cv::Mat_<cv::Vec3b>(hsv)) {
    p[0] = static_cast<std::uint8_t>((p[0] + delta + 256) & 0xFF);
  }
  cv::cvtColor(hsv, image, cv::COLOR_HSV2RGB_FULL);
}

// Images of widths that are multiples of 32 (224, 256, 96): the same pixels as OpenCV's. Other
// widths: the same but in each row's last width % 32 pixels, which OpenCV rounds where this
// truncates, one level at most.
TEST(image_hue_test, AdjustHueIsOpenCvs) {
  if (!opencv_uses_avx2()) GTEST_SKIP() << "this CPU has no AVX2: OpenCV takes other paths";
  unsigned seed = 1;
  for (auto [width, height] : {std::pair{224, 224}, std::pair{256, 17}, std::pair{96, 300},
                               std::pair{37, 41}, std::pair{255, 3}, std::pair{5, 5}}) {
    for (double shift : {-0.5, -0.31, -0.01, 0.0, 0.004, 0.2, 0.49}) {
      auto const w = static_cast<std::size_t>(width);
      bytes ours = random_image(w * static_cast<std::size_t>(height), seed++);
      bytes theirs = ours;
      adjust_hue(ours, shift);
      opencv_hue(theirs, height, width, shift);
      std::size_t const body = w / 32 * 32;
      std::size_t body_differ = 0;
      int tail_most = 0;
      for (std::size_t y = 0; y < static_cast<std::size_t>(height); ++y) {
        for (std::size_t x = 0; x < w; ++x) {
          for (std::size_t c = 0; c < 3; ++c) {
            std::size_t const i = (y * w + x) * 3 + c;
            int const d = std::abs(ours[i] - theirs[i]);
            if (x < body) {
              body_differ += d != 0 ? 1U : 0U;
            } else {
              tail_most = std::max(tail_most, d);
            }
          }
        }
      }
      EXPECT_EQ(body_differ, 0U) << width << "x" << height << " shift " << shift;
      EXPECT_LE(tail_most, 1) << width << "x" << height << " shift " << shift;
    }
  }
}

#else

TEST(image_hue_test, RgbToHsvIsOpenCvs) {
  GTEST_SKIP() << "built without OpenCV (GPUFEED_WITH_OPENCV=OFF): nothing to compare with";
}

TEST(image_hue_test, HsvToRgbIsOpenCvs) {
  GTEST_SKIP() << "built without OpenCV (GPUFEED_WITH_OPENCV=OFF): nothing to compare with";
}

TEST(image_hue_test, AdjustHueIsOpenCvs) {
  GTEST_SKIP() << "built without OpenCV (GPUFEED_WITH_OPENCV=OFF): nothing to compare with";
}

#endif

}  // namespace
