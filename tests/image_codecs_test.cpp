// Which files the image datasets read in this build, told by content: JPEG and PNG always (an
// image_folder of them, end to end, with every augmentation); BMP, TIFF, WebP and the other
// formats only OpenCV decodes where it is built in, and otherwise an error that says what the
// file is and which build reads it; anything else an error naming the file.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpufeed/datasets/image_folder.hpp"
#include "gpufeed/detail/image_pipeline.hpp"
#include "gpufeed/error.hpp"
#include "image/decode/image_format.hpp"
#include "support/image_sample.hpp"
#include "support/image_writers.hpp"
#include "support/temp_dir.hpp"
#if GPUFEED_WITH_OPENCV
#include "support/gdal_tsan_suppression.hpp"
#endif

namespace {

using gpufeed::detail::image_format;
using gpufeed::detail::image_pipeline;
using gpufeed::detail::sniff_image_format;
using gpufeed::test::encode_bmp_rgb;
using gpufeed::test::encode_jpeg_rgb;
using gpufeed::test::encode_png;
using gpufeed::test::png_picture;
using bytes = std::vector<std::uint8_t>;

constexpr int side = 16;

bytes picture(int variant) {
  bytes rgb(static_cast<std::size_t>(side) * side * 3);
  for (int y = 0; y < side; ++y) {
    for (int x = 0; x < side; ++x) {
      std::size_t const i = static_cast<std::size_t>(y * side + x) * 3;
      rgb[i] = static_cast<std::uint8_t>(x * 15 + variant);
      rgb[i + 1] = static_cast<std::uint8_t>(y * 13 + variant * 3);
      rgb[i + 2] = static_cast<std::uint8_t>((x + y) * 7);
    }
  }
  return rgb;
}

std::vector<unsigned char> png_of(bytes const& rgb) {
  png_picture p;
  p.width = side;
  p.height = side;
  p.samples.assign(rgb.begin(), rgb.end());
  return encode_png(p);
}

// The pipeline at the image's own size: the decoded pixels unchanged.
image_pipeline const& same_size() {
  static image_pipeline const pipeline{
      gpufeed::image_options{.height = side, .width = side, .resize_to = side}};
  return pipeline;
}

bytes transform(std::vector<unsigned char> const& encoded, std::string const& name) {
  bytes out(same_size().bytes());
  same_size().transform(encoded, name, out, 0);
  return out;
}

// The error for `encoded`, which must name the file.
std::string error_of(std::vector<unsigned char> const& encoded) {
  try {
    (void)transform(encoded, "/data/x.jpg");
  } catch (gpufeed::file_error const& e) {
    EXPECT_EQ(e.path(), "/data/x.jpg") << e.what();
    return e.what();
  }
  ADD_FAILURE() << "read without an error";
  return {};
}

std::vector<unsigned char> with_prefix(std::vector<unsigned char> head, std::size_t size) {
  for (std::size_t i = head.size(); i < size; ++i) {
    head.push_back(static_cast<unsigned char>((i * 7919U + 13U) % 251U));
  }
  return head;
}

TEST(image_codecs_test, FormatsAreToldByTheirFirstBytes) {
  bytes const rgb = picture(0);
  EXPECT_EQ(sniff_image_format(png_of(rgb)), image_format::png);
  EXPECT_EQ(sniff_image_format(encode_jpeg_rgb(rgb, side, side)), image_format::jpeg);
  EXPECT_EQ(sniff_image_format(encode_bmp_rgb(rgb, side, side)), image_format::bmp);
  EXPECT_EQ(sniff_image_format(with_prefix({'I', 'I', 42, 0}, 64)), image_format::tiff);
  EXPECT_EQ(sniff_image_format(with_prefix({'M', 'M', 0, 42}, 64)), image_format::tiff);
  EXPECT_EQ(
      sniff_image_format(with_prefix({'R', 'I', 'F', 'F', 9, 9, 0, 0, 'W', 'E', 'B', 'P'}, 64)),
      image_format::webp);
  EXPECT_EQ(sniff_image_format(with_prefix({'P', '6', '\n'}, 64)), image_format::pnm);
  EXPECT_EQ(sniff_image_format(with_prefix({0xFF, 0x4F, 0xFF, 0x51}, 64)), image_format::jpeg2000);
  EXPECT_EQ(sniff_image_format(with_prefix({'G', 'I', 'F', '8', '9', 'a'}, 64)),
            image_format::unknown);
  // "BM" opens text too; a BMP's reserved header words are zero.
  EXPECT_EQ(sniff_image_format(with_prefix({'B', 'M', 'W', ' ', 'i', 's', ' ', 'a'}, 64)),
            image_format::unknown);
  EXPECT_EQ(sniff_image_format(std::vector<unsigned char>{'P', '6'}), image_format::unknown);
}

TEST(image_codecs_test, PngAndJpegAreReadInEveryBuild) {
  bytes const rgb = picture(3);
  EXPECT_EQ(transform(png_of(rgb), "a.png"), rgb);
  bytes const jpeg = transform(encode_jpeg_rgb(rgb, side, side), "a.jpg");
  int most = 0;
  for (std::size_t i = 0; i < rgb.size(); ++i) most = std::max(most, std::abs(jpeg[i] - rgb[i]));
  EXPECT_LE(most, 12);  // quality 90 on a smooth picture
}

TEST(image_codecs_test, BmpIsReadWithOpenCv) {
#if GPUFEED_WITH_OPENCV
  bytes const rgb = picture(5);
  EXPECT_EQ(transform(encode_bmp_rgb(rgb, side, side), "a.bmp"), rgb);
#else
  GTEST_SKIP() << "built without OpenCV (GPUFEED_WITH_OPENCV=OFF): BMP is not read";
#endif
}

TEST(image_codecs_test, OpenCvFormatsWithoutOpenCvSayWhatToBuild) {
#if GPUFEED_WITH_OPENCV
  GTEST_SKIP() << "built with OpenCV: these formats are read";
#else
  struct named {
    std::vector<unsigned char> file;
    char const* format;
  };
  std::vector<named> const files{
      {encode_bmp_rgb(picture(1), side, side), "a BMP image"},
      {with_prefix({'I', 'I', 42, 0}, 200), "a TIFF image"},
      {with_prefix({'R', 'I', 'F', 'F', 9, 9, 0, 0, 'W', 'E', 'B', 'P'}, 200), "a WebP image"}};
  for (auto const& f : files) {
    std::string const message = error_of(f.file);
    EXPECT_NE(message.find(f.format), std::string::npos) << message;
    EXPECT_NE(message.find("reads JPEG and PNG only"), std::string::npos) << message;
    EXPECT_NE(message.find("GPUFEED_WITH_OPENCV=ON"), std::string::npos) << message;
  }
#endif
}

TEST(image_codecs_test, OtherFilesAreErrorsNamingThem) {
  std::string const gif = error_of(with_prefix({'G', 'I', 'F', '8', '9', 'a'}, 300));
  EXPECT_NE(gif.find("not a JPEG"), std::string::npos) << gif;
  std::string const text = error_of(with_prefix({'h', 'e', 'l', 'l', 'o'}, 300));
  EXPECT_NE(text.find("told by content"), std::string::npos) << text;
#if GPUFEED_WITH_OPENCV
  // Damaged, in a format OpenCV reads: its decoder's failure, naming the format.
  std::string const bmp = error_of(with_prefix({'B', 'M', 0, 0, 0, 0, 0, 0, 0, 0}, 300));
  EXPECT_NE(bmp.find("BMP"), std::string::npos) << bmp;
#endif
}

// An image_folder of JPEGs and PNGs, read with crop, flip and the whole colour jitter (hue
// included): every sample is read, the same seed gives the same pixels, the jitter changes them.
TEST(image_codecs_test, AFolderOfJpegsAndPngsReadsWithEveryAugmentation) {
  gpufeed::test::temp_dir dir;
  for (int i = 0; i < 6; ++i) {
    bytes const rgb = picture(i * 20);
    auto const path = dir.path() / (i % 2 == 0 ? "cat" : "dog") / ("img" + std::to_string(i));
    if (i % 3 == 0) {
      gpufeed::test::write_file(path.string() + ".jpg", encode_jpeg_rgb(rgb, side, side));
    } else {
      gpufeed::test::write_file(path.string() + ".png", png_of(rgb));
    }
  }
  gpufeed::image_options plain{
      .height = 8, .width = 8, .resize = gpufeed::resize_mode::random_resized_crop};
  gpufeed::image_options augmented = plain;
  augmented.horizontal_flip = true;
  augmented.jitter = {0.4F, 0.4F, 0.4F, 0.3F};
  gpufeed::image_folder const a{dir.path(), plain};
  gpufeed::image_folder const b{dir.path(), augmented};
  ASSERT_EQ(a.size(), 6U);
  ASSERT_EQ(b.size(), 6U);
  std::size_t changed = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    auto const first = gpufeed::test::read_sample(b, i, 7 + i).image;
    EXPECT_EQ(first, gpufeed::test::read_sample(b, i, 7 + i).image) << i;
    if (first != gpufeed::test::read_sample(a, i, 7 + i).image) ++changed;
  }
  EXPECT_GE(changed, 5U);
}

}  // namespace
