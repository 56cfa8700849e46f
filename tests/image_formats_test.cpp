// What the image datasets decode a file to: by content, not extension; grey, CMYK and YCCK JPEGs
// as OpenCV makes them; reduced-size decodes as OpenCV's and close to full decodes; the JPEG
// header read once. Fixtures are written with OpenCV, except two tiny CMYK and YCCK JPEGs
// (OpenCV cannot write those), embedded below.

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <utility>
#include <vector>

#include "gpufeed/datasets/image_folder.hpp"
#include "gpufeed/error.hpp"
#include "image/decode/jpeg_decode.hpp"
#include "image/pipeline/decode_strategy.hpp"
#include "support/gdal_tsan_suppression.hpp"
#include "support/image_fixtures.hpp"
#include "support/image_samples.hpp"
#include "support/reference_resize.hpp"

namespace {

namespace fs = std::filesystem;
using gpufeed::image_options;
using gpufeed::resize_mode;
using gpufeed::detail::scoped_decode_strategy;
using gpufeed::test::encode;
using gpufeed::test::make_noise;
using gpufeed::test::make_picture;
using gpufeed::test::max_abs_diff;
using gpufeed::test::mean_abs_diff;
using gpufeed::test::pixels;
using gpufeed::test::read_sample;
using gpufeed::test::rgb_bytes;
using gpufeed::test::temp_dir;
using gpufeed::test::write_bytes;

// A 16 x 16 CMYK JPEG, written once with libjpeg (OpenCV cannot write CMYK), with an Adobe marker
// and inverted inks as Adobe's software writes them. Quadrants: cyan, magenta / yellow, 50 % black.
constexpr auto cmyk_jpeg = std::to_array<unsigned char>(
    {0xFF, 0xD8, 0xFF, 0xEE, 0x00, 0x0E, 0x41, 0x64, 0x6F, 0x62, 0x65, 0x00, 0x64, 0x00, 0x00, 0x00,
     0x00, 0x00, 0xFF, 0xDB, 0x00, 0x43, 0x00, 0x02, 0x01, 0x01, 0x01, 0x01, 0x01, 0x02, 0x01, 0x01,
     0x01, 0x02, 0x02, 0x02, 0x02, 0x02, 0x04, 0x03, 0x02, 0x02, 0x02, 0x02, 0x05, 0x04, 0x04, 0x03,
     0x04, 0x06, 0x05, 0x06, 0x06, 0x06, 0x05, 0x06, 0x06, 0x06, 0x07, 0x09, 0x08, 0x06, 0x07, 0x09,
     0x07, 0x06, 0x06, 0x08, 0x0B, 0x08, 0x09, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x06, 0x08, 0x0B, 0x0C,
     0x0B, 0x0A, 0x0C, 0x09, 0x0A, 0x0A, 0x0A, 0xFF, 0xC0, 0x00, 0x14, 0x08, 0x00, 0x10, 0x00, 0x10,
     0x04, 0x43, 0x11, 0x00, 0x4D, 0x11, 0x00, 0x59, 0x11, 0x00, 0x4B, 0x11, 0x00, 0xFF, 0xC4, 0x00,
     0x16, 0x00, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
     0x00, 0x00, 0x0A, 0x00, 0x09, 0xFF, 0xC4, 0x00, 0x14, 0x10, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xDA, 0x00, 0x0E, 0x04,
     0x43, 0x00, 0x4D, 0x00, 0x59, 0x00, 0x4B, 0x00, 0x00, 0x3F, 0x00, 0x3F, 0xED, 0xFC, 0x6F, 0xE3,
     0x7F, 0x0F, 0xF0, 0x00, 0xD2, 0x47, 0xF8, 0x00, 0x69, 0x23, 0xFC, 0x1F, 0xF7, 0xFF, 0xD9});
// The same picture stored as YCCK (Adobe transform 2).
constexpr auto ycck_jpeg = std::to_array<unsigned char>(
    {0xFF, 0xD8, 0xFF, 0xEE, 0x00, 0x0E, 0x41, 0x64, 0x6F, 0x62, 0x65, 0x00, 0x64, 0x00, 0x00, 0x00,
     0x00, 0x02, 0xFF, 0xDB, 0x00, 0x43, 0x00, 0x02, 0x01, 0x01, 0x01, 0x01, 0x01, 0x02, 0x01, 0x01,
     0x01, 0x02, 0x02, 0x02, 0x02, 0x02, 0x04, 0x03, 0x02, 0x02, 0x02, 0x02, 0x05, 0x04, 0x04, 0x03,
     0x04, 0x06, 0x05, 0x06, 0x06, 0x06, 0x05, 0x06, 0x06, 0x06, 0x07, 0x09, 0x08, 0x06, 0x07, 0x09,
     0x07, 0x06, 0x06, 0x08, 0x0B, 0x08, 0x09, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x06, 0x08, 0x0B, 0x0C,
     0x0B, 0x0A, 0x0C, 0x09, 0x0A, 0x0A, 0x0A, 0xFF, 0xDB, 0x00, 0x43, 0x01, 0x02, 0x02, 0x02, 0x02,
     0x02, 0x02, 0x05, 0x03, 0x03, 0x05, 0x0A, 0x07, 0x06, 0x07, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A,
     0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A,
     0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A,
     0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0xFF, 0xC0, 0x00, 0x14,
     0x08, 0x00, 0x10, 0x00, 0x10, 0x04, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01, 0x04,
     0x22, 0x00, 0xFF, 0xC4, 0x00, 0x18, 0x00, 0x00, 0x02, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x07, 0x08, 0x0A, 0xFF, 0xC4, 0x00, 0x14,
     0x10, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
     0x00, 0x00, 0xFF, 0xC4, 0x00, 0x15, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xFF, 0xC4, 0x00, 0x28, 0x11, 0x00, 0x01,
     0x02, 0x03, 0x04, 0x0B, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x11,
     0x13, 0x08, 0x14, 0x15, 0x02, 0x04, 0x42, 0x61, 0x06, 0x17, 0x18, 0x21, 0x22, 0x23, 0x26, 0x41,
     0x44, 0x62, 0x64, 0xFF, 0xDA, 0x00, 0x0E, 0x04, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11, 0x04, 0x00,
     0x00, 0x3F, 0x00, 0xA5, 0xE6, 0x50, 0x43, 0x68, 0x2C, 0x89, 0x88, 0x19, 0xD5, 0xC5, 0x2B, 0xA8,
     0x1F, 0x7D, 0xFF, 0x00, 0x10, 0x04, 0x19, 0xFA, 0x6D, 0xAA, 0x9E, 0x48, 0x9D, 0xD7, 0x74, 0x8C,
     0x1D, 0x25, 0xDB, 0x46, 0x89, 0xCA, 0xA5, 0x52, 0xA6, 0x71, 0x4D, 0x3B, 0x35, 0x2F, 0x95, 0xDC,
     0x02, 0x5F, 0xDC, 0x8F, 0x08, 0xF1, 0x3F, 0xC0, 0x19, 0xFF, 0x00, 0x7F, 0xFF, 0xD9});

// Decoded pixels against OpenCV's; each case writes its files under its own temporary folder.
class image_formats_test : public ::testing::Test {
 protected:
  [[nodiscard]] fs::path scratch() const { return dir_.path(); }

 private:
  temp_dir dir_;
};

TEST_F(image_formats_test, DecodesByContentNotExtension) {
  auto const dir = scratch() / "content" / "c";
  auto const picture = make_picture(40, 30, 9);
  auto const jpeg = encode(picture, ".jpg");
  write_bytes(dir / "real.png", encode(picture, ".png"));
  write_bytes(dir / "png-named.jpg", encode(picture, ".png"));
  write_bytes(dir / "jpeg-named.png", jpeg);
  gpufeed::image_folder d{dir.parent_path(),
                          image_options{.height = 30, .width = 40, .resize_to = 30}};
  ASSERT_EQ(d.size(), 3U);
  auto const a = read_sample(d, 1);  // png-named.jpg
  auto const b = read_sample(d, 2);  // real.png
  EXPECT_EQ(a.image, b.image);
  EXPECT_EQ(a.image, rgb_bytes(picture));  // same size: a plain copy, RGB
  EXPECT_EQ(read_sample(d, 0).image, rgb_bytes(cv::imdecode(jpeg, cv::IMREAD_COLOR)));
}

// Grey, CMYK and YCCK JPEGs become RGB as cv::imdecode makes them (CMYK within a grey level or
// two: the conversion rounds where OpenCV's shifts).
TEST_F(image_formats_test, GreyCmykAndYcckJpegsDecode) {
  auto const dir = scratch() / "colour-spaces" / "c";
  cv::Mat grey;
  cv::cvtColor(make_picture(40, 30, 4), grey, cv::COLOR_BGR2GRAY);
  auto const grey_jpeg = encode(grey, ".jpg");
  write_bytes(dir / "cmyk.jpg", {cmyk_jpeg.begin(), cmyk_jpeg.end()});
  write_bytes(dir / "grey.jpg", grey_jpeg);
  write_bytes(dir / "ycck.jpg", {ycck_jpeg.begin(), ycck_jpeg.end()});

  gpufeed::image_folder g{dir.parent_path(),
                          image_options{.height = 30, .width = 40, .resize_to = 30}};
  auto const grey_rgb = read_sample(g, 1).image;
  EXPECT_EQ(grey_rgb, rgb_bytes(cv::imdecode(grey_jpeg, cv::IMREAD_COLOR)));
  for (std::size_t i = 0; i + 2 < grey_rgb.size(); i += 3) {
    ASSERT_TRUE(grey_rgb[i] == grey_rgb[i + 1] && grey_rgb[i] == grey_rgb[i + 2])
        << "pixel " << i / 3;
  }

  gpufeed::image_folder d{dir.parent_path(),
                          image_options{.height = 16, .width = 16, .resize_to = 16}};
  struct quadrant {
    int x;
    int y;
    std::array<int, 3> rgb;
  };
  std::array<quadrant, 4> const quadrants{{{4, 4, {0, 255, 255}},        // cyan
                                           {12, 4, {255, 0, 255}},       // magenta
                                           {4, 12, {255, 255, 0}},       // yellow
                                           {12, 12, {127, 127, 127}}}};  // 50 % black
  for (std::size_t index : {0U, 2U}) {
    auto const& bytes = index == 0 ? std::vector<unsigned char>(cmyk_jpeg.begin(), cmyk_jpeg.end())
                                   : std::vector<unsigned char>(ycck_jpeg.begin(), ycck_jpeg.end());
    auto const got = read_sample(d, index).image;
    ASSERT_EQ(got.size(), 16U * 16U * 3U);
    EXPECT_LT(mean_abs_diff(got, rgb_bytes(cv::imdecode(bytes, cv::IMREAD_COLOR))), 1.5) << index;
    for (auto const& q : quadrants) {
      for (std::size_t c = 0; c < 3; ++c) {
        int const v =
            got[(static_cast<std::size_t>(q.y) * 16U + static_cast<std::size_t>(q.x)) * 3U + c];
        EXPECT_NEAR(v, q.rgb[c], 6) << "image " << index << " at " << q.x << "," << q.y;
      }
    }
  }
}

TEST_F(image_formats_test, ReducedDecodingIsCloseToFullDecoding) {
  auto const dir = scratch() / "reduced" / "c";
  auto const picture = make_picture(512, 384, 2);
  auto const jpeg = encode(picture, ".jpg");
  write_bytes(dir / "big.jpg", jpeg);
  gpufeed::detail::jpeg_reader const header{jpeg, "big.jpg"};
  EXPECT_EQ(header.width(), 512);
  EXPECT_EQ(header.height(), 384);
  EXPECT_TRUE(header.complete());
  for (auto mode : {resize_mode::center_crop, resize_mode::random_resized_crop}) {
    image_options const o{.height = 32, .width = 32, .resize = mode};  // 1/8 for center_crop
    gpufeed::image_folder reduced{dir.parent_path(), o};
    scoped_decode_strategy const full_size{{.reduced = false}};
    gpufeed::image_folder full{dir.parent_path(), o};
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      auto const a = read_sample(reduced, 0, seed).image;
      auto const b = read_sample(full, 0, seed).image;
      EXPECT_LT(mean_abs_diff(a, b), 3.0) << "seed " << seed;
    }
  }
}

// At 1/2, 1/4 and 1/8 the pixels are exactly cv::imdecode's IMREAD_REDUCED_COLOR_* (the same
// libjpeg scaling), and without reduction a full decode shrunk by the reference resize.
TEST_F(image_formats_test, ReducedDecodingGivesOpenCvPixels) {
  auto const dir = scratch() / "reduced-exact" / "c";
  auto const jpeg = encode(make_noise(512, 384), ".jpg");
  write_bytes(dir / "big.jpg", jpeg);
  for (auto [factor, flag] :
       {std::pair{2, cv::IMREAD_REDUCED_COLOR_2}, std::pair{4, cv::IMREAD_REDUCED_COLOR_4},
        std::pair{8, cv::IMREAD_REDUCED_COLOR_8}}) {
    int const w = 512 / factor;
    int const h = 384 / factor;
    // The crop is the whole image and the output its 1/factor size: the decode alone shrinks it.
    image_options const o{.height = h, .width = w, .resize_to = h};
    gpufeed::image_folder reduced{dir.parent_path(), o};
    cv::Mat const want = cv::imdecode(jpeg, flag | cv::IMREAD_IGNORE_ORIENTATION);
    ASSERT_EQ(want.cols, w);
    EXPECT_EQ(read_sample(reduced, 0).image, rgb_bytes(want)) << "1/" << factor;

    // RGB all the way (image_planar_test covers the planar path).
    scoped_decode_strategy const full_size{{.reduced = false, .planar = false}};
    gpufeed::image_folder full{dir.parent_path(), o};
    cv::Mat const whole = cv::imdecode(jpeg, cv::IMREAD_COLOR);
    auto const shrunk = gpufeed::test::reference_resize(whole, {0, 0, 512, 384}, w, h);
    EXPECT_LE(max_abs_diff(read_sample(full, 0).image, rgb_bytes(shrunk)), 1)
        << "1/" << factor << " by resizing";
  }
}

// The header is read once, by libjpeg: the frame's size, and whether an end-of-image marker
// follows the scan (a file cut short in its scan data is told apart before any row is decoded).
TEST_F(image_formats_test, ReadsJpegHeaders) {
  using gpufeed::detail::jpeg_reader;
  auto const jpeg = encode(make_picture(33, 17, 0), ".jpg");
  jpeg_reader const h{jpeg, "a.jpg"};
  EXPECT_EQ(h.width(), 33);
  EXPECT_EQ(h.height(), 17);
  EXPECT_TRUE(h.complete());
  std::vector<unsigned char> cut(jpeg.begin(), jpeg.end() - 10);
  EXPECT_FALSE(jpeg_reader(cut, "cut.jpg").complete());
  EXPECT_THROW(jpeg_reader(encode(make_picture(8, 8, 0), ".png"), "a.png"), gpufeed::file_error);
  for (std::size_t n = 0; n < 40 && n < jpeg.size(); ++n) {  // every short prefix is an error
    EXPECT_THROW(jpeg_reader({jpeg.data(), n}, "short.jpg"), gpufeed::file_error) << n;
  }
}

}  // namespace
