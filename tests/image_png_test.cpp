// PNG decoding with libpng (image/decode/png_decode.hpp): every colour type, bit depth and
// interlacing against the pixels the test put in (and, where OpenCV is built in, against
// cv::imdecode, whose pixels the decoder keeps); damaged, truncated and oversized files; many
// threads at once.

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "gpufeed/error.hpp"
#include "image/decode/png_decode.hpp"
#include "support/image_writers.hpp"
#if GPUFEED_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "support/gdal_tsan_suppression.hpp"
#endif

namespace {

using gpufeed::detail::decode_png_rgbx;
using gpufeed::detail::rgbx_buffer;
using gpufeed::detail::rgbx_view;
using gpufeed::test::encode_png;
using gpufeed::test::png_picture;
using rgb_pixels = std::vector<std::uint8_t>;

// A picture of `color_type` and `bit_depth` whose samples run through their whole range.
png_picture make_png(int color_type, int bit_depth, bool interlaced, int width = 13,
                     int height = 11) {
  png_picture p;
  p.width = width;
  p.height = height;
  p.color_type = color_type;
  p.bit_depth = bit_depth;
  p.interlaced = interlaced;
  int const channels = gpufeed::test::png_channels(color_type);
  unsigned const top = (1U << static_cast<unsigned>(bit_depth)) - 1U;
  if (color_type == PNG_COLOR_TYPE_PALETTE) {
    for (unsigned i = 0; i <= top; ++i) {
      p.palette.push_back({static_cast<png_byte>(i * 37U + 5U),
                           static_cast<png_byte>(255U - i * 11U), static_cast<png_byte>(i * 91U)});
    }
  }
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        auto const v = static_cast<unsigned>(x * 7919 + y * 104729 + c * 15485863) * 2654435761U;
        p.samples.push_back(static_cast<std::uint16_t>((v >> 7U) % (top + 1U)));
      }
    }
  }
  return p;
}

// What the decoder must give for `p`: RGB, 16-bit samples' high byte, low-depth grey scaled
// to 8 bits, palettes looked up, alpha dropped.
rgb_pixels expected_rgb(png_picture const& p) {
  int const channels = gpufeed::test::png_channels(p.color_type);
  auto to8 = [&](unsigned v) -> std::uint8_t {
    if (p.bit_depth == 16) return static_cast<std::uint8_t>(v >> 8U);
    return static_cast<std::uint8_t>(v * 255U / ((1U << static_cast<unsigned>(p.bit_depth)) - 1U));
  };
  rgb_pixels out;
  for (std::size_t i = 0; i < p.samples.size(); i += static_cast<std::size_t>(channels)) {
    if (p.color_type == PNG_COLOR_TYPE_PALETTE) {
      png_color const c = p.palette[p.samples[i]];
      out.insert(out.end(), {c.red, c.green, c.blue});
    } else if ((p.color_type & PNG_COLOR_MASK_COLOR) == 0) {
      std::uint8_t const g = to8(p.samples[i]);
      out.insert(out.end(), {g, g, g});
    } else {
      out.insert(out.end(), {to8(p.samples[i]), to8(p.samples[i + 1]), to8(p.samples[i + 2])});
    }
  }
  return out;
}

rgb_pixels rgb_of(rgbx_view const& v) {
  rgb_pixels out;
  for (int y = 0; y < v.height; ++y) {
    std::uint8_t const* row = v.data + static_cast<std::size_t>(y) * v.stride;
    for (std::size_t x = 0; x < static_cast<std::size_t>(v.width); ++x) {
      out.insert(out.end(), row + 4 * x, row + 4 * x + 3);
    }
  }
  return out;
}

rgb_pixels decode(std::vector<unsigned char> const& bytes, int* width = nullptr,
                  int* height = nullptr) {
  rgbx_buffer pixels;
  rgbx_view const v = decode_png_rgbx(bytes, "test.png", pixels);
  if (width != nullptr) *width = v.width;
  if (height != nullptr) *height = v.height;
  return rgb_of(v);
}

struct png_kind {
  int color_type;
  int bit_depth;
};

constexpr std::array<png_kind, 14> all_kinds{{{PNG_COLOR_TYPE_GRAY, 1},
                                              {PNG_COLOR_TYPE_GRAY, 2},
                                              {PNG_COLOR_TYPE_GRAY, 4},
                                              {PNG_COLOR_TYPE_GRAY, 8},
                                              {PNG_COLOR_TYPE_GRAY, 16},
                                              {PNG_COLOR_TYPE_GRAY_ALPHA, 8},
                                              {PNG_COLOR_TYPE_GRAY_ALPHA, 16},
                                              {PNG_COLOR_TYPE_PALETTE, 1},
                                              {PNG_COLOR_TYPE_PALETTE, 2},
                                              {PNG_COLOR_TYPE_PALETTE, 4},
                                              {PNG_COLOR_TYPE_PALETTE, 8},
                                              {PNG_COLOR_TYPE_RGB, 8},
                                              {PNG_COLOR_TYPE_RGB, 16},
                                              {PNG_COLOR_TYPE_RGBA, 8}}};

std::string describe(png_picture const& p) {
  return "colour type " + std::to_string(p.color_type) + ", " + std::to_string(p.bit_depth) +
         " bits" + (p.interlaced ? ", interlaced" : "") + (p.transparency.empty() ? "" : ", tRNS");
}

#if GPUFEED_WITH_OPENCV
rgb_pixels opencv_rgb(std::vector<unsigned char> const& bytes) {
  cv::Mat const bgr = cv::imdecode(bytes, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  return {rgb.data, rgb.data + rgb.total() * 3};
}
#endif

// Each kind, plain and interlaced, and RGBA 16-bit and palettes with transparency.
std::vector<png_picture> every_picture() {
  std::vector<png_picture> out;
  for (bool interlaced : {false, true}) {
    for (auto k : all_kinds) out.push_back(make_png(k.color_type, k.bit_depth, interlaced));
    out.push_back(make_png(PNG_COLOR_TYPE_RGBA, 16, interlaced));
    for (int depth : {2, 8}) {
      png_picture p = make_png(PNG_COLOR_TYPE_PALETTE, depth, interlaced);
      for (std::size_t i = 0; i < p.palette.size(); ++i) {
        p.transparency.push_back(static_cast<std::uint8_t>(i * 53U));
      }
      out.push_back(p);
    }
  }
  // Sizes where Adam7's passes are empty or one pixel wide.
  for (auto [w, h] : {std::pair{1, 1}, std::pair{1, 9}, std::pair{9, 1}, std::pair{3, 2}}) {
    out.push_back(make_png(PNG_COLOR_TYPE_RGB, 8, true, w, h));
  }
  return out;
}

TEST(image_png_test, EveryKindDecodesToItsPixels) {
  for (png_picture const& p : every_picture()) {
    auto const bytes = encode_png(p);
    int width = 0;
    int height = 0;
    EXPECT_EQ(decode(bytes, &width, &height), expected_rgb(p)) << describe(p);
    EXPECT_EQ(width, p.width) << describe(p);
    EXPECT_EQ(height, p.height) << describe(p);
  }
}

TEST(image_png_test, EveryKindMatchesOpenCv) {
#if GPUFEED_WITH_OPENCV
  for (png_picture const& p : every_picture()) {
    auto const bytes = encode_png(p);
    EXPECT_EQ(decode(bytes), opencv_rgb(bytes)) << describe(p);
  }
#else
  GTEST_SKIP() << "built without OpenCV (GPUFEED_WITH_OPENCV=OFF): nothing to compare with";
#endif
}

TEST(image_png_test, TheFourthByteIsOpaque) {
  auto const bytes = encode_png(make_png(PNG_COLOR_TYPE_RGBA, 8, false));
  rgbx_buffer pixels;
  rgbx_view const v = decode_png_rgbx(bytes, "a.png", pixels);
  for (int y = 0; y < v.height; ++y) {
    for (int x = 0; x < v.width; ++x) {
      ASSERT_EQ(
          v.data[static_cast<std::size_t>(y) * v.stride + static_cast<std::size_t>(4 * x + 3)], 255)
          << x << "," << y;
    }
  }
}

// The error names the file and says it is a damaged PNG, with libpng's message.
void expect_corrupt(std::vector<unsigned char> const& bytes, std::string const& what) {
  rgbx_buffer pixels;
  try {
    (void)decode_png_rgbx(bytes, "/data/damaged.png", pixels);
    ADD_FAILURE() << what << ": decoded without an error";
  } catch (gpufeed::file_error const& e) {
    EXPECT_EQ(e.path(), "/data/damaged.png") << what;
    EXPECT_NE(std::string{e.what()}.find("PNG"), std::string::npos) << what << ": " << e.what();
  }
}

TEST(image_png_test, TruncatedFilesAreErrors) {
  auto const bytes = encode_png(make_png(PNG_COLOR_TYPE_RGB, 8, false, 40, 30));
  for (std::size_t keep : {std::size_t{8}, std::size_t{20}, std::size_t{33}, std::size_t{60},
                           bytes.size() / 2, bytes.size() - 13, bytes.size() - 1}) {
    expect_corrupt({bytes.begin(), bytes.begin() + static_cast<long>(keep)},
                   "cut to " + std::to_string(keep) + " bytes");
  }
  auto const interlaced = encode_png(make_png(PNG_COLOR_TYPE_RGB, 8, true, 40, 30));
  expect_corrupt(
      {interlaced.begin(), interlaced.begin() + static_cast<long>(interlaced.size() / 2)},
      "interlaced, cut in half");
}

TEST(image_png_test, DamagedFilesAreErrors) {
  auto const good = encode_png(make_png(PNG_COLOR_TYPE_RGB, 8, false, 40, 30));
  auto bad_ihdr_crc = good;  // IHDR's CRC is bytes 29..32
  bad_ihdr_crc[30] ^= 0x55U;
  expect_corrupt(bad_ihdr_crc, "IHDR CRC");
  auto bad_ihdr = good;  // bit depth 7 with a matching CRC would be needed; a wrong CRC is enough
  bad_ihdr[24] = 7;
  expect_corrupt(bad_ihdr, "IHDR bit depth");
  auto bad_data = good;  // the compressed pixels (and so IDAT's CRC)
  for (std::size_t i = 45; i < 60; ++i) bad_data[i] ^= 0xA5U;
  expect_corrupt(bad_data, "IDAT bytes");
  std::vector<unsigned char> noise(good.begin(), good.begin() + 8);  // signature, then noise
  for (int i = 0; i < 500; ++i) noise.push_back(static_cast<unsigned char>((i * 7919 + 13) % 251));
  expect_corrupt(noise, "noise after the signature");
}

// A CRC-32 (PNG's, zlib's polynomial) for hand-made chunks.
std::uint32_t crc32_of(std::vector<unsigned char> const& bytes) {
  std::uint32_t crc = 0xFFFFFFFFU;
  for (unsigned char b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1U) ^ (0xEDB88320U & (0U - (crc & 1U)));
  }
  return crc ^ 0xFFFFFFFFU;
}

// A PNG whose valid IHDR states `width` x `height`, then the start of an IDAT chunk: the decoder
// sees the size before any pixel data.
std::vector<unsigned char> png_claiming(std::uint32_t width, std::uint32_t height) {
  std::vector<unsigned char> out{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13};
  std::vector<unsigned char> chunk{'I', 'H', 'D', 'R'};
  for (std::uint32_t v : {width, height}) {
    for (int s = 24; s >= 0; s -= 8) chunk.push_back(static_cast<unsigned char>(v >> s));
  }
  chunk.insert(chunk.end(), {8, 2, 0, 0, 0});  // 8-bit RGB
  std::uint32_t const crc = crc32_of(chunk);
  out.insert(out.end(), chunk.begin(), chunk.end());
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<unsigned char>(crc >> s));
  out.insert(out.end(), {0, 0, 0, 100, 'I', 'D', 'A', 'T'});
  out.resize(out.size() + 100, 0);
  return out;
}

TEST(image_png_test, AbsurdSizesAreRefusedBeforeAllocating) {
  rgbx_buffer pixels;
  try {  // 3.6e9 pixels: each side within libpng's limits, the product over 2^30
    (void)decode_png_rgbx(png_claiming(60000, 60000), "/data/huge.png", pixels);
    ADD_FAILURE() << "a 60000x60000 PNG was accepted";
  } catch (gpufeed::file_error const& e) {
    EXPECT_EQ(e.path(), "/data/huge.png");
    EXPECT_NE(std::string{e.what()}.find("60000x60000"), std::string::npos) << e.what();
  }
  expect_corrupt(png_claiming(0x7FFFFFFFU, 1), "width 2^31 - 1 (over libpng's limit)");
  expect_corrupt(png_claiming(1, 0), "no rows");
}

// Workers decode at once: each thread's pixels are its own image's.
TEST(image_png_test, ThreadsDecodeIndependently) {
  std::vector<std::vector<unsigned char>> files;
  std::vector<rgb_pixels> want;
  for (int i = 0; i < 8; ++i) {
    auto const p = make_png(i % 2 == 0 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY_ALPHA,
                            i % 3 == 0 ? 16 : 8, i % 4 == 0, 50 + i, 40 - i);
    files.push_back(encode_png(p));
    want.push_back(expected_rgb(p));
  }
  std::vector<int> mismatches(8, 0);
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        auto const i = static_cast<std::size_t>((t + round) % 8);
        if (decode(files[i]) != want[i]) ++mismatches[static_cast<std::size_t>(t)];
        auto cut = files[i];  // errors on the same threads, in between
        cut.resize(cut.size() / 2);
        rgbx_buffer pixels;
        EXPECT_THROW((void)decode_png_rgbx(cut, "cut.png", pixels), gpufeed::file_error);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(8, 0));
}

}  // namespace
