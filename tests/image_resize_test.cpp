// The image datasets' resampler: RGB and planes resized as the reference model
// (tests/support/reference_resize.hpp) does, the SIMD kernels giving the plain kernels' pixels.

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>
#include <vector>

#include "gpufeed/datasets/image_folder.hpp"
#include "image/pipeline/decode_strategy.hpp"
#include "image/resample/image_resize.hpp"
#include "support/gdal_tsan_suppression.hpp"
#include "support/image_fixtures.hpp"
#include "support/jpeg_test_images.hpp"
#include "support/reference_resize.hpp"

namespace {

namespace fs = std::filesystem;
using gpufeed::image_options;
using gpufeed::resize_mode;
using gpufeed::detail::scoped_decode_strategy;
using gpufeed::test::area_of;
using gpufeed::test::compare;
using gpufeed::test::differing_bytes;
using gpufeed::test::encode_jpeg;
using gpufeed::test::jpeg_layout;
using gpufeed::test::largest_difference;
using gpufeed::test::make_photo;
using gpufeed::test::pixels;
using gpufeed::test::read_pixels;
using gpufeed::test::sampled_layouts;
using gpufeed::test::temp_dir;
using gpufeed::test::with_kernels;
using gpufeed::test::write_bytes;

// One geometry of the resize tests: a crop of the picture and the output size.
struct resize_case {
  int x = 0;
  int y = 0;
  int w = 0;
  int h = 0;
  int ow = 0;
  int oh = 0;
  bool mirror = false;
  [[nodiscard]] gpufeed::detail::crop_area area() const { return area_of({x, y, w, h}); }
  [[nodiscard]] std::string what() const {
    return "crop " + std::to_string(x) + "," + std::to_string(y) + " " + std::to_string(w) + "x" +
           std::to_string(h) + " -> " + std::to_string(ow) + "x" + std::to_string(oh) +
           (mirror ? " mirrored" : "");
  }
};

// 200 geometries for a picture of `width` x `height` (at least 150 x 110), mirrored every other
// one: first enlargements by 7/5 and 7/4 (of 150 x 110 and 100 x 80 pixels), where every seventh
// output row and column is a copy of an input one, inside the SIMD passes' blocks; reductions
// by about 9 (150 x 110 to 16 x 12), whose passes have more taps than the unrolled kernels take;
// then random crops up and down to 1 .. 200 pixels, one in ten a copy along x, one in ten along
// y (a pass of copied rows). Output sizes take every remainder of 8 and 16 (the SIMD passes'
// blocks of rows and values).
std::vector<resize_case> resize_cases(int width, int height, unsigned seed) {
  std::vector<resize_case> cases{{0, 0, 150, 110, 210, 154}, {0, 0, 150, 110, 210, 154},
                                 {0, 0, 100, 80, 175, 140},  {0, 0, 100, 80, 175, 140},
                                 {0, 0, 150, 110, 16, 12},   {0, 0, 150, 110, 16, 12}};
  std::mt19937 rng{seed};
  auto const pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>{lo, hi}(rng); };
  while (cases.size() < 200) {
    int const trial = static_cast<int>(cases.size());
    resize_case c;
    c.w = pick(1, width);
    c.h = pick(1, height);
    c.x = pick(0, width - c.w);
    c.y = pick(0, height - c.h);
    c.ow = trial % 10 == 3 ? c.w : pick(1, 200);
    c.oh = trial % 10 == 7 ? c.h : pick(1, 200);
    cases.push_back(c);
  }
  for (std::size_t i = 0; i < cases.size(); ++i) cases[i].mirror = i % 2 == 1;
  return cases;
}

// Planes of `picture` as JPEG stores them (BT.601 full range, rounded), with chroma averaged
// over `step` x `step` pixels, each row padded as decode_planes pads it (the resampler reads
// whole blocks of 16 samples).
struct test_planes {
  std::array<std::vector<std::uint8_t>, 3> bytes;
  gpufeed::detail::ycc_view view;
  cv::Mat ycc;  // full resolution, CV_8UC3 Y Cb Cr
};

test_planes planes_of(cv::Mat const& picture, int step) {
  test_planes t;
  t.ycc = cv::Mat(picture.rows, picture.cols, CV_8UC3);
  for (int y = 0; y < picture.rows; ++y) {
    for (int x = 0; x < picture.cols; ++x) {
      cv::Vec3b const p = picture.at<cv::Vec3b>(y, x);  // R G B
      double const r = p[0];
      double const g = p[1];
      double const b = p[2];
      t.ycc.at<cv::Vec3b>(y, x) = {
          cv::saturate_cast<std::uint8_t>(std::lround(0.299 * r + 0.587 * g + 0.114 * b)),
          cv::saturate_cast<std::uint8_t>(std::lround(128 - 0.168736 * r - 0.331264 * g + 0.5 * b)),
          cv::saturate_cast<std::uint8_t>(
              std::lround(128 + 0.5 * r - 0.418688 * g - 0.081312 * b))};
    }
  }
  std::array<gpufeed::detail::plane_view*, 3> const views{&t.view.y, &t.view.cb, &t.view.cr};
  for (int c = 0; c < 3; ++c) {
    int const s = c == 0 ? 1 : step;
    int const w = (picture.cols + s - 1) / s;
    int const h = (picture.rows + s - 1) / s;
    std::size_t const stride = static_cast<std::size_t>(w) + 48;
    auto& bytes = t.bytes[static_cast<std::size_t>(c)];
    bytes.assign(stride * static_cast<std::size_t>(h + 1), 0);
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        int sum = 0;
        int n = 0;
        for (int dy = 0; dy < s && y * s + dy < picture.rows; ++dy) {
          for (int dx = 0; dx < s && x * s + dx < picture.cols; ++dx, ++n) {
            sum += t.ycc.at<cv::Vec3b>(y * s + dy, x * s + dx)[c];
          }
        }
        bytes[static_cast<std::size_t>(y) * stride + static_cast<std::size_t>(x)] =
            static_cast<std::uint8_t>((sum + n / 2) / n);
      }
    }
    *views[static_cast<std::size_t>(c)] = {bytes.data(), stride, w, h, s, s};
  }
  t.view.width = picture.cols;
  t.view.height = picture.rows;
  t.view.decoded = {0, 0, picture.cols, picture.rows};
  return t;
}

// JPEG's YCbCr -> RGB of unrounded values, rounded once.
cv::Mat rgb_of_ycc(cv::Mat const& ycc) {
  cv::Mat out(ycc.rows, ycc.cols, CV_8UC3);
  for (int y = 0; y < ycc.rows; ++y) {
    for (int x = 0; x < ycc.cols; ++x) {
      cv::Vec3d const v = ycc.at<cv::Vec3d>(y, x);
      double const cb = v[1] - 128;
      double const cr = v[2] - 128;
      out.at<cv::Vec3b>(y, x) = {
          cv::saturate_cast<std::uint8_t>(std::lround(v[0] + 1.402 * cr)),
          cv::saturate_cast<std::uint8_t>(std::lround(v[0] - 0.344136 * cb - 0.714136 * cr)),
          cv::saturate_cast<std::uint8_t>(std::lround(v[0] + 1.772 * cb))};
    }
  }
  return out;
}

}  // namespace

// The resize against the reference model, on resize_cases' geometries; the SIMD kernels (four
// turned rows at a time, and the rows left over one by one) give exactly the plain kernels'
// pixels.
TEST(image_resize_test, ResizeMatchesTheReference) {
  cv::Mat const picture = make_photo(150, 110, 11);
  gpufeed::detail::rgbx_buffer source;
  std::uint8_t* rows = source.reset(picture.cols, picture.rows);
  cv::Mat rgbx(picture.rows, picture.cols, CV_8UC4, rows, source.stride());
  cv::cvtColor(picture, rgbx, cv::COLOR_RGB2RGBA);
  auto const view = source.view(picture.cols, picture.rows);
  for (resize_case const& c : resize_cases(picture.cols, picture.rows, 5)) {
    cv::Mat got(c.oh, c.ow, CV_8UC3);
    gpufeed::detail::resize_rgbx_to_rgb(view, c.area(), {got.data, got.total() * 3}, c.ow, c.oh,
                                        c.mirror);
    cv::Mat plain(c.oh, c.ow, CV_8UC3);
    bool const was_fast = with_kernels(true, [&] {
      gpufeed::detail::resize_rgbx_to_rgb(view, c.area(), {plain.data, plain.total() * 3}, c.ow,
                                          c.oh, c.mirror);
    });
    if (was_fast) {
      EXPECT_EQ(differing_bytes(got, plain), 0U) << "SIMD and plain kernels differ: " << c.what();
    }
    cv::Mat want = gpufeed::test::reference_resize(picture, {c.x, c.y, c.w, c.h}, c.ow, c.oh);
    if (c.mirror) cv::flip(want, want, 1);
    EXPECT_LE(largest_difference(got, want), 1) << c.what();
  }
}

// The planes' resize (resize_ycc_to_rgb) on resize_cases' geometries: with chroma at full
// resolution, the reference model of the YCbCr image converted to RGB, within a grey level; with
// chroma subsampled too, the SIMD kernels (eight turned rows at a time) give exactly the plain
// kernels' pixels.
TEST(image_resize_test, PlaneResizeMatchesTheReference) {
  cv::Mat const picture = make_photo(150, 110, 12);
  for (int step : {1, 2}) {
    test_planes const planes = planes_of(picture, step);
    for (resize_case const& c : resize_cases(picture.cols, picture.rows, 6)) {
      std::string const what = "chroma step " + std::to_string(step) + ", " + c.what();
      cv::Mat got(c.oh, c.ow, CV_8UC3);
      gpufeed::detail::resize_ycc_to_rgb(planes.view, c.area(), {got.data, got.total() * 3}, c.ow,
                                         c.oh, c.mirror);
      cv::Mat plain(c.oh, c.ow, CV_8UC3);
      bool const was_fast = with_kernels(true, [&] {
        gpufeed::detail::resize_ycc_to_rgb(planes.view, c.area(), {plain.data, plain.total() * 3},
                                           c.ow, c.oh, c.mirror);
      });
      if (was_fast) {
        ASSERT_EQ(differing_bytes(got, plain), 0U) << "SIMD and plain kernels differ: " << what;
      }
      if (step != 1) continue;
      cv::Mat want = rgb_of_ycc(
          gpufeed::test::reference_resize_exact(planes.ycc, {c.x, c.y, c.w, c.h}, c.ow, c.oh));
      if (c.mirror) cv::flip(want, want, 1);
      ASSERT_LE(largest_difference(got, want), 1) << what;
    }
  }
}

// The SIMD kernels and the plain C++ ones give the same pixels, on both paths.
TEST(image_resize_test, PortableKernelsGiveTheSamePixels) {
  temp_dir dir;
  write_bytes(dir.path() / "c" / "a.jpg", encode_jpeg(make_photo(333, 250, 9), {}));
  write_bytes(dir.path() / "c" / "b.jpg",
              encode_jpeg(make_photo(200, 301, 10), {.h_luma = 1, .v_luma = 1}));
  for (bool planar_path : {true, false}) {
    for (int size : {224, 61}) {
      scoped_decode_strategy const strategy{{.planar = planar_path}};
      gpufeed::image_folder d{dir.path(), image_options{.height = size,
                                                        .width = size + 3,
                                                        .resize = resize_mode::random_resized_crop,
                                                        .horizontal_flip = true}};
      for (std::size_t i = 0; i < d.size(); ++i) {
        for (std::uint64_t seed = 0; seed < 5; ++seed) {
          pixels plain;
          bool const was_fast = with_kernels(true, [&] { plain = read_pixels(d, i, seed); });
          EXPECT_TRUE(was_fast);
          EXPECT_EQ(plain, read_pixels(d, i, seed)) << "planar " << planar_path << ", size " << size
                                                    << ", image " << i << ", seed " << seed;
        }
      }
    }
  }
}
