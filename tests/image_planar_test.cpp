// The planar path of the image datasets' JPEG decode: planes decoded in part are the whole
// decode's; their copy is libjpeg's RGB decode exactly, and their resample close to the RGB
// path's; images it cannot take go the RGB way untouched.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <opencv2/core.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gpufeed/datasets/image_folder.hpp"
#include "image/decode/jpeg_decode.hpp"
#include "image/pipeline/decode_strategy.hpp"
#include "image/resample/image_resize.hpp"
#include "support/gdal_tsan_suppression.hpp"
#include "support/image_fixtures.hpp"
#include "support/jpeg_test_images.hpp"

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
using gpufeed::test::make_photo;
using gpufeed::test::pixels;
using gpufeed::test::read_pixels;
using gpufeed::test::rgb_of;
using gpufeed::test::sampled_layouts;
using gpufeed::test::temp_dir;
using gpufeed::test::with_kernels;
using gpufeed::test::write_bytes;

}  // namespace

// copy_ycc_to_rgb turns the planes into exactly libjpeg's RGB decode of the same pixels: for
// 4:2:0, 4:2:2 and 4:4:4, odd image sizes, full and reduced sizes, areas on every edge, at odd
// and even offsets and ends, mirrored or not, with the SIMD and the plain kernels. Planes decoded
// only down to the area's rows and the chroma row below (check_whole_file = false) give the same.
TEST(image_planar_test, CopyOfThePlanesIsLibjpegsDecode) {
  cv::Mat const picture = make_photo(333, 251, 13);
  std::mt19937 rng{17};
  std::vector<std::pair<std::string, jpeg_layout>> const layouts{
      {"4:2:0", {}}, {"4:2:2", {.h_luma = 2, .v_luma = 1}}, {"4:4:4", {.h_luma = 1, .v_luma = 1}}};
  for (auto const& [name, layout] : layouts) {
    auto const jpeg = encode_jpeg(picture, layout);
    for (int reduction : {1, 2, 4, 8}) {
      gpufeed::detail::rgbx_buffer whole_pixels;
      gpufeed::detail::jpeg_reader whole{jpeg, "whole.jpg"};
      whole.set_reduction(reduction);
      if (reduction == 8 && name == "4:2:2") continue;  // repeated chroma (the next test)
      int const w = whole.decoded_width();
      int const h = whole.decoded_height();
      auto const all = whole.decode({0, 0, w, h}, whole_pixels);
      std::vector<gpufeed::detail::pixel_rect> rects{{0, 0, w, h},
                                                     {0, 0, 1, 1},
                                                     {w - 1, h - 1, 1, 1},
                                                     {1, 1, w - 2, h - 2},
                                                     {w - 17, 3, 17, 2}};
      for (int trial = 0; trial < 40; ++trial) {
        int const rw = std::uniform_int_distribution<int>{1, w}(rng);
        int const rh = std::uniform_int_distribution<int>{1, h}(rng);
        rects.push_back({std::uniform_int_distribution<int>{0, w - rw}(rng),
                         std::uniform_int_distribution<int>{0, h - rh}(rng), rw, rh});
      }
      for (std::size_t i = 0; i < rects.size(); ++i) {
        auto const rect = rects[i];
        bool const stop = i % 2 == 1;  // every other area decoded only down to its rows
        gpufeed::detail::jpeg_reader part{jpeg, "part.jpg"};
        part.set_reduction(reduction);
        part.set_read_to_end(!stop);
        ASSERT_TRUE(part.planes_copy_exactly()) << name << " at 1/" << reduction;
        std::vector<std::uint8_t> planes;
        auto const ycc = part.decode_planes(
            planes, gpufeed::detail::planes_read(area_of(rect), rect.width, rect.height,
                                                 part.planes_chroma_steps()));
        ASSERT_TRUE(gpufeed::detail::ycc_copy_supported(ycc));
        if (stop && rect.y + rect.height + 32 < h && reduction == 1) {
          ASSERT_LT(ycc.decoded.y + ycc.decoded.height, h) << "the decode stopped";
        }
        cv::Mat want = rgb_of(all, rect);
        for (bool const mirror : {false, true}) {
          if (mirror) cv::flip(want, want, 1);
          for (bool const portable : {false, true}) {
            cv::Mat got(rect.height, rect.width, CV_8UC3);
            (void)with_kernels(portable, [&] {
              gpufeed::detail::copy_ycc_to_rgb(ycc, rect.x, rect.y, {got.data, got.total() * 3},
                                               rect.width, rect.height, mirror);
            });
            ASSERT_EQ(differing_bytes(got, want), 0U)
                << name << " at 1/" << reduction << ", area " << rect.x << "," << rect.y << " "
                << rect.width << "x" << rect.height << (mirror ? ", mirrored" : "")
                << (portable ? ", plain kernels" : ", SIMD kernels");
          }
        }
      }
    }
  }
}

// What a crop reads of the planes, which decode_planes then decodes: a resampled crop the whole
// pixels it touches; a copy, along each subsampled axis, also the pixels of the chroma samples
// beside it that libjpeg's upsampling reads (copy_samples_read: the one before an even first
// pixel, the one after an odd last pixel), and nothing more where the chroma is not subsampled.
TEST(image_planar_test, PlanesReadAreTheCropAndACopysChromaContext) {
  using gpufeed::detail::pixel_rect;
  auto const read = [](gpufeed::detail::crop_area area, int out, int x_step, int y_step) {
    pixel_rect const r = gpufeed::detail::planes_read(area, out, out, {x_step, y_step});
    return std::array<int, 4>{r.x, r.y, r.width, r.height};
  };
  using rect = std::array<int, 4>;
  EXPECT_EQ(read({48, 16, 224, 224}, 224, 1, 1), (rect{48, 16, 224, 224}));  // 4:4:4
  EXPECT_EQ(read({48, 16, 224, 224}, 224, 2, 2), (rect{46, 14, 228, 228}));  // 4:2:0
  EXPECT_EQ(read({48, 16, 224, 224}, 224, 2, 1), (rect{46, 16, 228, 224}));  // 4:2:2
  // From an odd pixel (its sample's second) to an even one (its sample's first): the samples
  // under the crop are enough on the left and top, one more is read on the right and bottom.
  EXPECT_EQ(read({49, 17, 224, 224}, 224, 2, 2), (rect{48, 16, 226, 226}));
  EXPECT_EQ(read({0, 0, 8, 8}, 8, 2, 2), (rect{0, 0, 10, 10}));  // none before the first
  // Resampled: the whole pixels touched, whatever the sampling.
  EXPECT_EQ(read({10.5, 3.25, 100, 50}, 224, 2, 2), (rect{10, 3, 101, 51}));
  EXPECT_EQ(read({10.5, 3.25, 100, 50}, 224, 1, 1), (rect{10, 3, 101, 51}));
}

// What copy_ycc_to_rgb cannot reproduce is not asked of it: 4:4:0 (libjpeg's vertical-only
// upsampling) and chroma repeated at 1/8 of the size; and an area below the rows decoded is a
// logic error, not pixels made up.
TEST(image_planar_test, CopyOfThePlanesRefusesWhatItCannotReproduce) {
  cv::Mat const picture = make_photo(200, 160, 14);
  auto const tall = encode_jpeg(picture, {.h_luma = 1, .v_luma = 2});
  gpufeed::detail::jpeg_reader reader440{tall, "440.jpg"};
  EXPECT_FALSE(reader440.planes_copy_exactly());
  // 4:2:2 at 1/8: its chroma is still subsampled across, and libjpeg repeats it there.
  gpufeed::detail::jpeg_reader eighth{encode_jpeg(picture, {.h_luma = 2, .v_luma = 1}), "422.jpg"};
  eighth.set_reduction(8);
  EXPECT_FALSE(eighth.planes_copy_exactly());
  auto const common = encode_jpeg(picture, {});
  gpufeed::detail::jpeg_reader stopped{common, "420.jpg"};
  stopped.set_read_to_end(false);
  std::vector<std::uint8_t> planes;
  auto const ycc = stopped.decode_planes(planes, {0, 0, 10, 20});
  ASSERT_EQ(ycc.decoded.y, 0);
  ASSERT_EQ(ycc.decoded.height, 32);  // two rows of 16 x 16 blocks
  std::vector<std::uint8_t> out31(3 * 10 * 31);
  std::vector<std::uint8_t> out32(3 * 10 * 32);
  EXPECT_NO_THROW(gpufeed::detail::copy_ycc_to_rgb(ycc, 0, 0, out31, 10, 31, false));
  EXPECT_THROW(gpufeed::detail::copy_ycc_to_rgb(ycc, 0, 0, out32, 10, 32, false), std::logic_error)
      << "the last row's chroma context (row 32) was not decoded";
}

// decode_planes of a rectangle: every sample under it (in whole iMCUs) is the whole decode's, for
// every chroma sampling, restart markers and a progressive file, at every reduction, stopping or
// reading to the end. Where partial_planes_built(), a baseline file's samples outside those
// iMCUs are left as the buffer held them: not transformed, which is what the rectangle saves;
// the progressive file is decoded from the top, in every column.
TEST(image_planar_test, PlanesOfARectangleAreTheWholeDecodes) {
  cv::Mat const picture = make_photo(333, 251, 21);
  auto layouts = sampled_layouts();
  layouts.push_back({"restarts", {.restart_rows = 1}});
  std::mt19937 rng{23};
  constexpr std::uint8_t untouched = 0x5A;  // what the part's buffer holds before its decode
  for (auto const& [name, layout] : layouts) {
    auto const jpeg = encode_jpeg(picture, layout);
    for (int reduction : {1, 2, 4, 8}) {
      std::vector<std::uint8_t> whole_planes;
      gpufeed::detail::jpeg_reader whole{jpeg, "whole.jpg"};
      whole.set_reduction(reduction);
      int const w = whole.decoded_width();
      int const h = whole.decoded_height();
      auto const all = whole.decode_planes(whole_planes, {0, 0, w, h});
      ASSERT_EQ(all.decoded.x, 0);
      ASSERT_EQ(all.decoded.y, 0);
      ASSERT_EQ(all.decoded.width, w);
      ASSERT_EQ(all.decoded.height, h);
      std::vector<gpufeed::detail::pixel_rect> rects{
          {0, 0, w, h},        {0, 0, 1, 1},    {w - 1, h - 1, 1, 1}, {w / 3, h / 3, w / 3, h / 3},
          {-5, -5, w + 10, 9}, {w - 3, 0, 9, h}};
      for (int trial = 0; trial < 12; ++trial) {
        int const rw = std::uniform_int_distribution<int>{1, w}(rng);
        int const rh = std::uniform_int_distribution<int>{1, h}(rng);
        rects.push_back({std::uniform_int_distribution<int>{0, w - rw}(rng),
                         std::uniform_int_distribution<int>{0, h - rh}(rng), rw, rh});
      }
      // The pixels of an iMCU at this scale (libjpeg scales each block to 8 / reduction).
      int const imcu_w = layout.h_luma * 8 / reduction;
      int const imcu_h = layout.v_luma * 8 / reduction;
      for (std::size_t i = 0; i < rects.size(); ++i) {
        auto const rect = rects[i];
        bool const stop = i % 2 == 1;
        std::string const what = name + " at 1/" + std::to_string(reduction) + ", rect " +
                                 std::to_string(rect.x) + "," + std::to_string(rect.y) + " " +
                                 std::to_string(rect.width) + "x" + std::to_string(rect.height) +
                                 (stop ? ", stopping" : ", to the end");
        gpufeed::detail::jpeg_reader part{jpeg, "part.jpg"};
        part.set_reduction(reduction);
        part.set_read_to_end(!stop);
        std::vector<std::uint8_t> planes(whole_planes.size(), untouched);
        auto const got = part.decode_planes(planes, rect);
        int const x0 = std::clamp(rect.x, 0, w - 1);
        int const y0 = std::clamp(rect.y, 0, h - 1);
        int const x1 = std::clamp(rect.x + rect.width, x0 + 1, w);
        int const y1 = std::clamp(rect.y + rect.height, y0 + 1, h);
        auto const& d = got.decoded;
        if (gpufeed::detail::partial_planes_built() && !layout.progressive) {
          EXPECT_EQ(d.x, x0 / imcu_w * imcu_w) << what;
          EXPECT_EQ(d.y, y0 / imcu_h * imcu_h) << what;
          EXPECT_EQ(d.x + d.width, std::min((x1 + imcu_w - 1) / imcu_w * imcu_w, w)) << what;
          EXPECT_EQ(d.y + d.height, std::min((y1 + imcu_h - 1) / imcu_h * imcu_h, h)) << what;
        } else {
          EXPECT_EQ(d.x, 0) << what;
          EXPECT_EQ(d.y, 0) << what;
          EXPECT_EQ(d.width, w) << what;
          EXPECT_EQ(d.height, stop ? std::min((y1 + imcu_h - 1) / imcu_h * imcu_h, h) : h) << what;
        }
        std::array<gpufeed::detail::plane_view const*, 3> const mine{&got.y, &got.cb, &got.cr};
        std::array<gpufeed::detail::plane_view const*, 3> const theirs{&all.y, &all.cb, &all.cr};
        for (std::size_t c = 0; c < 3; ++c) {
          auto const& p = *mine[c];
          auto const& q = *theirs[c];
          ASSERT_EQ(p.width, q.width);
          ASSERT_EQ(p.height, q.height);
          std::size_t wrong = 0;
          std::size_t touched = 0;
          for (int row = 0; row < p.height; ++row) {
            for (int col = 0; col < p.width; ++col) {
              std::uint8_t const v =
                  p.data[static_cast<std::size_t>(row) * p.stride + static_cast<std::size_t>(col)];
              if (gpufeed::detail::samples_decoded(p, d, col, row, col + 1, row + 1)) {
                wrong += v != q.data[static_cast<std::size_t>(row) * q.stride +
                                     static_cast<std::size_t>(col)];
              } else {
                touched += v != untouched;
              }
            }
          }
          EXPECT_EQ(wrong, 0U) << what << ", plane " << c;
          EXPECT_EQ(touched, 0U) << what << ", plane " << c << ": samples outside those decoded";
        }
      }
    }
  }
}

// The colour arithmetic alone, for every (Cb, Cr) pair at luma values across the range, against
// jdcolor.c's tables written out here (build_ycc_rgb_table, ycc_rgb_convert): the AVX2 kernel's
// 16-bit split of each factor gives libjpeg's integers exactly, as the plain kernel does.
TEST(image_planar_test, CopyConvertsEveryChromaPairAsLibjpegsTables) {
  constexpr int side = 256;                  // 4:4:4 planes: Cb = the column, Cr = the row
  constexpr std::size_t stride = side + 32;  // padded as the decoder pads its rows
  std::vector<std::uint8_t> planes(3 * stride * side);
  std::uint8_t* const luma = planes.data();
  std::uint8_t* const cb = luma + stride * side;
  std::uint8_t* const cr = cb + stride * side;
  for (std::size_t r = 0; r < side; ++r) {
    for (std::size_t c = 0; c < side; ++c) {
      cb[r * stride + c] = static_cast<std::uint8_t>(c);
      cr[r * stride + c] = static_cast<std::uint8_t>(r);
    }
  }
  gpufeed::detail::ycc_view const view{{luma, stride, side, side, 1, 1},
                                       {cb, stride, side, side, 1, 1},
                                       {cr, stride, side, side, 1, 1},
                                       side,
                                       side,
                                       {0, 0, side, side}};
  auto const fix = [](double x) { return static_cast<std::int32_t>(x * 65536 + 0.5); };
  std::array<int, 256> cr_r{}, cb_b{};
  std::array<std::int32_t, 256> cr_g{}, cb_g{};
  for (std::size_t i = 0; i < 256; ++i) {
    int const x = static_cast<int>(i) - 128;
    cr_r[i] = (fix(1.40200) * x + 32768) >> 16;
    cb_b[i] = (fix(1.77200) * x + 32768) >> 16;
    cr_g[i] = -fix(0.71414) * x;
    cb_g[i] = -fix(0.34414) * x + 32768;
  }
  auto const byte = [](int v) { return static_cast<std::uint8_t>(std::clamp(v, 0, 255)); };
  std::vector<std::uint8_t> out(3 * side * side);
  for (int const y : {0, 1, 17, 128, 200, 254, 255}) {
    std::fill(luma, luma + stride * side, static_cast<std::uint8_t>(y));
    for (bool const portable : {false, true}) {
      (void)with_kernels(
          portable, [&] { gpufeed::detail::copy_ycc_to_rgb(view, 0, 0, out, side, side, false); });
      std::size_t wrong = 0;
      for (std::size_t r = 0; r < side; ++r) {
        for (std::size_t c = 0; c < side; ++c) {
          std::uint8_t const* const p = out.data() + 3 * (r * side + c);
          wrong += static_cast<std::size_t>(p[0] != byte(y + cr_r[r])) +
                   static_cast<std::size_t>(p[1] != byte(y + ((cb_g[c] + cr_g[r]) >> 16))) +
                   static_cast<std::size_t>(p[2] != byte(y + cb_b[c]));
        }
      }
      EXPECT_EQ(wrong, 0U) << "luma " << y << (portable ? ", plain kernel" : ", SIMD kernel");
    }
  }
}

// A centre crop the output's size (Resize(256) + CenterCrop(224) of images whose short side is
// 256) takes the planar path, to the very pixels of the RGB path, for every chroma sampling,
// offsets odd and even, stopping after the crop or not.
TEST(image_planar_test, CentreCropCopiesTakeThePlanarPathWithTheSamePixels) {
  temp_dir dir;
  auto layouts = sampled_layouts();
  std::vector<std::pair<int, int>> const sizes{{320, 256}, {333, 256}, {256, 333}};
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    for (std::size_t s = 0; s < sizes.size(); ++s) {
      write_bytes(dir.path() / "c" / (layouts[i].first + "-" + std::to_string(s) + ".jpg"),
                  encode_jpeg(make_photo(sizes[s].first, sizes[s].second,
                                         static_cast<unsigned>(60 + 3 * i + s)),
                              layouts[i].second));
    }
  }
  for (bool const check : {true, false}) {
    image_options const o{.height = 224, .width = 224, .resize_to = 256, .check_whole_file = check};
    gpufeed::image_folder planar{dir.path(), o};
    scoped_decode_strategy const rgb_decode{{.planar = false}};
    gpufeed::image_folder rgb{dir.path(), o};
    for (std::size_t i = 0; i < planar.size(); ++i) {
      ASSERT_EQ(read_pixels(planar, i, 0), read_pixels(rgb, i, 0))
          << planar.entries()[i].path << (check ? "" : ", stopping after the crop");
    }
    // Every image but the 4:4:0 ones went the planar way.
    EXPECT_EQ(planar.stage_times().planar_images, planar.size() - sizes.size())
        << (check ? "checked" : "stopping");
    EXPECT_EQ(rgb.stage_times().planar_images, 0U);
  }
}

// The planar path (planes resampled, colour converted at the output size) against RGB decodes
// resampled the same way: close on average, unbiased, bounded at sharp colour edges; for every
// chroma sampling, at full and reduced size. And it is taken: it decodes whole images.
TEST(image_planar_test, PlanarDecodingIsCloseToRgbDecoding) {
  temp_dir dir;
  auto const layouts = sampled_layouts();
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    write_bytes(
        dir.path() / "c" / (layouts[i].first + ".jpg"),
        encode_jpeg(make_photo(333, 250, static_cast<unsigned>(20 + i)), layouts[i].second));
  }
  for (int size : {224, 96}) {  // 96: DCT scaling for the larger crops
    image_options const o{.height = size,
                          .width = size,
                          .resize = resize_mode::random_resized_crop,
                          .scale_min = 0.7F,  // crops over 60 % of the image: the planar path
                          .horizontal_flip = true};
    gpufeed::image_folder planar{dir.path(), o};
    scoped_decode_strategy const rgb_decode{{.planar = false}};
    gpufeed::image_folder rgb{dir.path(), o};
    for (std::size_t i = 0; i < planar.size(); ++i) {
      for (std::uint64_t seed = 0; seed < 6; ++seed) {
        auto const d = compare(read_pixels(planar, i, seed), read_pixels(rgb, i, seed));
        std::string const what = planar.entries()[i].path + ", seed " + std::to_string(seed) +
                                 ", output " + std::to_string(size);
        EXPECT_LT(d.mean, 1.0) << what;
        for (double const b : d.bias) EXPECT_LT(std::abs(b), 0.25) << what;
        EXPECT_LE(d.most, 64) << what;
      }
    }
    auto const whole = planar.stage_times();
    EXPECT_EQ(whole.images, rgb.stage_times().images);
    EXPECT_GT(static_cast<double>(whole.decoded_pixels),
              0.99 * static_cast<double>(rgb.stage_times().decoded_pixels))
        << "the planar path decodes every pixel";
  }
}

// Grey JPEGs (one component) and PNGs take the RGB path: the planar path changes none of their
// pixels.
TEST(image_planar_test, PlanarDecodingLeavesOtherImagesAlone) {
  temp_dir dir;
  write_bytes(dir.path() / "c" / "grey.jpg", encode_jpeg(make_photo(120, 90, 4), {.grey = true}));
  write_bytes(dir.path() / "c" / "photo.png",
              gpufeed::test::encode(make_photo(120, 90, 5), ".png"));
  image_options const o{.height = 64, .width = 64, .resize = resize_mode::random_resized_crop};
  gpufeed::image_folder planar{dir.path(), o};
  scoped_decode_strategy const rgb_decode{{.planar = false}};
  gpufeed::image_folder rgb{dir.path(), o};
  for (std::size_t i = 0; i < planar.size(); ++i) {
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      EXPECT_EQ(read_pixels(planar, i, seed), read_pixels(rgb, i, seed)) << i << ", seed " << seed;
    }
  }
}
