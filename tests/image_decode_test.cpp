// The image datasets' cropped and reduced decoding: a JPEG decoded only where the crop needs it
// gives the pixels of a whole decode; damage outside the crop is still an error unless
// check_whole_file is off; the decode plan is the cheaper one; the stage times count each image.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "gpufeed/datasets/file_list.hpp"
#include "gpufeed/datasets/image_folder.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/loader.hpp"
#include "image/decode/jpeg_decode.hpp"
#include "image/pipeline/decode_strategy.hpp"
#include "support/gdal_tsan_suppression.hpp"
#include "support/image_fixtures.hpp"
#include "support/jpeg_test_images.hpp"

namespace {

namespace fs = std::filesystem;
using gpufeed::image_options;
using gpufeed::resize_mode;
using gpufeed::detail::decode_strategy;
using gpufeed::detail::scoped_decode_strategy;
using gpufeed::test::compare;
using gpufeed::test::differing_bytes;
using gpufeed::test::encode_jpeg;
using gpufeed::test::jpeg_layout;
using gpufeed::test::make_photo;
using gpufeed::test::pixels;
using gpufeed::test::read_pixels;
using gpufeed::test::rgb_of;
using gpufeed::test::sampled_layouts;
using gpufeed::test::scan_start;
using gpufeed::test::temp_dir;
using gpufeed::test::with_bad_markers;
using gpufeed::test::write_bytes;

}  // namespace

// jpeg_reader::decode of a rectangle gives exactly the pixels of a whole decode there, for
// every chroma sampling, grey, progressive and restart-marker files, at full and reduced size,
// with rectangles on and off block boundaries and touching every edge.
TEST(image_decode_test, CroppedDecodeEqualsWholeDecode) {
  cv::Mat const picture = make_photo(333, 250, 7);
  std::vector<std::pair<std::string, jpeg_layout>> const layouts{
      {"4:2:0", {}},
      {"4:2:2", {.h_luma = 2, .v_luma = 1}},
      {"4:4:0", {.h_luma = 1, .v_luma = 2}},
      {"4:4:4", {.h_luma = 1, .v_luma = 1}},
      {"grey", {.grey = true}},
      {"progressive", {.progressive = true}},
      {"restarts", {.restart_rows = 1}}};
  std::vector<gpufeed::detail::pixel_rect> const rects{
      {0, 0, 333, 250}, {16, 16, 32, 32}, {17, 15, 100, 61}, {100, 200, 233, 50},
      {1, 1, 331, 248}, {47, 90, 1, 1},   {320, 0, 13, 250}};
  for (auto const& [name, layout] : layouts) {
    auto const jpeg = encode_jpeg(picture, layout);
    for (int reduction : {1, 2, 4}) {
      gpufeed::detail::rgbx_buffer whole_pixels;
      gpufeed::detail::jpeg_reader whole{jpeg, "whole.jpg"};
      whole.set_reduction(reduction);
      int const w = whole.decoded_width();
      int const h = whole.decoded_height();
      auto const all = whole.decode({0, 0, w, h}, whole_pixels);
      ASSERT_EQ(all.width, w);
      for (auto rect : rects) {
        rect = {rect.x / reduction, rect.y / reduction, std::max(1, rect.width / reduction),
                std::max(1, rect.height / reduction)};
        gpufeed::detail::rgbx_buffer part_pixels;
        gpufeed::detail::jpeg_reader part{jpeg, "part.jpg"};
        part.set_reduction(reduction);
        auto const got = part.decode(rect, part_pixels);
        ASSERT_LE(got.x, rect.x);
        ASSERT_GE(got.x + got.width, rect.x + rect.width);
        EXPECT_EQ(got.y, rect.y);
        EXPECT_EQ(differing_bytes(rgb_of(got, rect), rgb_of(all, rect)), 0U)
            << name << " at 1/" << reduction << ", rect " << rect.x << "," << rect.y << " "
            << rect.width << "x" << rect.height;
      }
    }
  }
}

// Through the dataset: cropped decoding changes no pixel of random-resized crops.
TEST(image_decode_test, CroppedDecodingKeepsTheDatasetsPixels) {
  temp_dir dir;
  auto const root = dir.path() / "folder";
  for (unsigned i = 0; i < 3; ++i) {
    write_bytes(root / "c" / ("p" + std::to_string(i) + ".jpg"),
                encode_jpeg(make_photo(320 + 37 * static_cast<int>(i), 256, i), {}));
  }
  for (int size : {224, 64}) {  // 64: also DCT scaling for the larger crops
    image_options const o{.height = size,
                          .width = size,
                          .resize = resize_mode::random_resized_crop,
                          .horizontal_flip = true};
    // RGB decodes only: the planar path decodes all.
    scoped_decode_strategy const rgb{{.planar = false}};
    gpufeed::image_folder cropped{root, o};
    scoped_decode_strategy const rgb_whole{{.cropped = false, .planar = false}};
    gpufeed::image_folder whole{root, o};
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      for (std::size_t i = 0; i < cropped.size(); ++i) {
        ASSERT_EQ(read_pixels(cropped, i, seed), read_pixels(whole, i, seed))
            << "image " << i << ", seed " << seed << ", output " << size;
      }
    }
    // The crops decoded less than the whole images.
    auto const fewer = cropped.stage_times();
    auto const all = whole.stage_times();
    EXPECT_EQ(fewer.images, 20U * cropped.size());
    EXPECT_EQ(all.images, fewer.images);
    EXPECT_EQ(all.source_pixels, fewer.source_pixels);
    EXPECT_LT(fewer.decoded_pixels, all.decoded_pixels * 3 / 4) << "output " << size;
  }
}

// Damage in the rows above or under the crop, which are skipped and never reach the output, is
// still an error by default: the entropy-coded data is read to its end. On both paths (the
// centre crop covers half the image: the planar one, unless it is off).
TEST(image_decode_test, DamageOutsideTheCropIsAnError) {
  temp_dir dir;
  auto const good = encode_jpeg(make_photo(256, 512, 3), {});
  ASSERT_GT(scan_start(good), 0U);
  write_bytes(dir.path() / "good.jpg", good);
  write_bytes(dir.path() / "damaged-above.jpg", with_bad_markers(good, 0.05));  // the top rows
  write_bytes(dir.path() / "damaged-below.jpg", with_bad_markers(good, 0.95));  // the bottom ones
  auto const csv = dir.path() / "list.csv";
  {
    std::FILE* f = std::fopen(csv.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("good.jpg,0\ndamaged-above.jpg,1\ndamaged-below.jpg,2\n", f);
    std::fclose(f);
  }
  // The centre 224 x 224 of a 256 x 512 image scaled by 7/8: source rows 128 .. 384 of 512.
  for (bool planar : {true, false}) {
    for (bool cropped : {true, false}) {
      scoped_decode_strategy const strategy{{.cropped = cropped, .planar = planar}};
      gpufeed::file_list d{csv, image_options{.resize_to = 224}};
      EXPECT_NO_THROW((void)read_pixels(d, 0, 0));
      for (std::size_t i : {1U, 2U}) {
        try {
          (void)read_pixels(d, i, 0);
          ADD_FAILURE() << "damage " << (i == 1 ? "above" : "under")
                        << " the crop was not reported (planar: " << planar
                        << ", cropped: " << cropped << ")";
        } catch (gpufeed::file_error const& e) {
          EXPECT_NE(std::string{e.what()}.find("corrupt JPEG"), std::string::npos) << e.what();
        }
      }
    }
  }
}

// libjpeg-turbo writes a row that starts on a 16- or 32-byte boundary with non-temporal stores,
// past the cache (a third slower in gpufeed-bench decode): no RGBX row of the
// decoder's buffer may start on one, whatever the width, and a view shows the rows reset gave.
TEST(image_decode_test, RgbxRowsStartOffSixteenByteBoundaries) {
  gpufeed::detail::rgbx_buffer buffer;
  for (int width : {1, 3, 4, 8, 60, 64, 241, 320, 333, 1024}) {
    for (int height : {1, 2, 7, 225}) {
      std::uint8_t* const first = buffer.reset(width, height);
      ASSERT_GE(buffer.stride(), 4 * static_cast<std::size_t>(width) + 16);
      auto const view = buffer.view(width, height);
      EXPECT_EQ(view.data, first);
      for (int r = 0; r < height; ++r) {
        auto const address =
            reinterpret_cast<std::uintptr_t>(first + buffer.stride() * static_cast<std::size_t>(r));
        ASSERT_NE(address % 16, 0U) << width << "x" << height << ", row " << r;
      }
      first[buffer.stride() * static_cast<std::size_t>(height) - 1] = 1;  // the last padding byte
    }
  }
}

// Every image read is counted once, with its read, decode and resize time.
TEST(image_decode_test, StageTimesCountEachImage) {
  temp_dir dir;
  for (int i = 0; i < 4; ++i) {
    write_bytes(dir.path() / "c" / ("p" + std::to_string(i) + ".jpg"),
                encode_jpeg(make_photo(96, 64, static_cast<unsigned>(i)), {}));
  }
  gpufeed::image_folder d{dir.path(), image_options{.height = 32, .width = 32}};
  EXPECT_EQ(d.stage_times().images, 0U);
  for (std::size_t i = 0; i < d.size(); ++i) (void)read_pixels(d, i, i);
  auto const t = d.stage_times();
  EXPECT_EQ(t.images, 4U);
  EXPECT_EQ(t.source_pixels, 4U * 96U * 64U);
  EXPECT_GT(t.decoded_pixels, 0U);
  EXPECT_GT(t.read_s, 0.0);
  EXPECT_GT(t.decode_s, 0.0);
  EXPECT_GT(t.resize_s, 0.0);  // (no jitter was asked: its time says nothing here)
}

// The decode plan is the cheaper one measured (gpufeed-bench decode): DCT scaling
// only by 2, 4 or 8, never by 3/8 .. 7/8 (no SIMD inverse DCTs: slower than a full decode); and
// Resize(256) + CenterCrop(224) of a 480x400 photograph, whose crop covers 64 % of it, through
// the planar path (the 16 x 16 iMCUs under the crop decoded; without partial_planes_built(),
// all), its pixels close to the cropped RGB decode's.
TEST(image_decode_test, DecodePlanIsTheCheapOne) {
  using gpufeed::detail::decode_strategy_for;
  using gpufeed::detail::jpeg_reduction;
  image_options const o{.height = 224, .width = 224};
  // Every shortcut by default, none with full_decoding.
  EXPECT_EQ(decode_strategy_for(o), decode_strategy{});
  EXPECT_EQ(decode_strategy_for(image_options{.full_decoding = true}),
            (decode_strategy{.reduced = false, .cropped = false, .planar = false}));
  decode_strategy const all = decode_strategy_for(o);
  EXPECT_EQ(jpeg_reduction(o, all, 350, 350), 1) << "not 6/8 (5/8 covers 224 too)";
  EXPECT_EQ(jpeg_reduction(o, all, 447, 600), 1);
  EXPECT_EQ(jpeg_reduction(o, all, 448, 448), 2);
  EXPECT_EQ(jpeg_reduction(o, all, 1000, 900), 4);
  EXPECT_EQ(jpeg_reduction(o, all, 1792, 1800), 8);
  EXPECT_EQ(jpeg_reduction(o, {.reduced = false}, 1792, 1800), 1);

  temp_dir dir;
  write_bytes(dir.path() / "c" / "photo.jpg", encode_jpeg(make_photo(480, 400, 31), {}));
  image_options const eval{.height = 224, .width = 224, .resize_to = 256};
  gpufeed::image_folder planar{dir.path(), eval};
  gpufeed::image_folder const rgb = [&] {
    scoped_decode_strategy const rgb_decode{{.planar = false}};
    return gpufeed::image_folder{dir.path(), eval};
  }();
  auto const d = compare(read_pixels(planar, 0, 0), read_pixels(rgb, 0, 0));
  EXPECT_LT(d.mean, 1.0);
  // The crop: 350 x 350 pixels from (65, 25), in iMCUs columns 64 .. 416 and rows 16 .. 384.
  EXPECT_EQ(planar.stage_times().planar_images, 1U);
  EXPECT_EQ(planar.stage_times().decoded_pixels,
            gpufeed::detail::partial_planes_built() ? 352U * 368U : 480U * 400U);
  EXPECT_EQ(rgb.stage_times().planar_images, 0U);
  EXPECT_LT(rgb.stage_times().decoded_pixels, 480U * 400U * 3U / 4U) << "the cropped path";

  // Crops of 8-20 % of the image: planar where only their iMCUs are decoded (baseline JPEGs,
  // where partial_planes_built()), cropped to RGB where the planar path would decode the whole
  // image (progressive), below planar_min_share.
  temp_dir small;
  write_bytes(small.path() / "a" / "baseline.jpg", encode_jpeg(make_photo(320, 256, 32), {}));
  write_bytes(small.path() / "b" / "progressive.jpg",
              encode_jpeg(make_photo(320, 256, 33), {.progressive = true}));
  gpufeed::image_folder crops{small.path(),
                              image_options{.height = 64,
                                            .width = 64,
                                            .resize = resize_mode::random_resized_crop,
                                            .scale_max = 0.2F}};
  ASSERT_LT(0.2, gpufeed::detail::planar_min_share);
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    (void)read_pixels(crops, 0, seed);  // baseline.jpg
    (void)read_pixels(crops, 1, seed);  // progressive.jpg
  }
  EXPECT_EQ(crops.stage_times().planar_images, gpufeed::detail::partial_planes_built() ? 10U : 0U);
}

// image_options::check_whole_file = false stops decoding after the crop's last row: every path
// (cropped RGB, planar, reduced, whole) gives exactly the pixels of the checked decode, for every
// chroma sampling, grey, restart-marker and progressive files. Each stopped decode follows the
// decode of another image of the same size, so rows it left out would show that image's.
TEST(image_decode_test, StoppingAfterTheCropKeepsThePixels) {
  temp_dir dir;
  auto layouts = sampled_layouts();
  layouts.push_back({"grey", {.grey = true}});
  layouts.push_back({"restarts", {.restart_rows = 2}});
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    for (unsigned variant = 0; variant < 2; ++variant) {
      write_bytes(dir.path() / "c" / (layouts[i].first + std::to_string(variant) + ".jpg"),
                  encode_jpeg(make_photo(333, 250, static_cast<unsigned>(40 + 2 * i + variant)),
                              layouts[i].second));
    }
  }
  for (auto const resize : {resize_mode::random_resized_crop, resize_mode::center_crop}) {
    for (int size : {224, 64}) {  // 64: DCT scaling for the larger crops
      for (bool planar : {true, false}) {
        image_options o{.height = size,
                        .width = size,
                        .resize = resize,
                        .horizontal_flip = true,
                        .check_whole_file = false};
        scoped_decode_strategy const strategy{{.planar = planar}};
        gpufeed::image_folder stopping{dir.path(), o};
        o.check_whole_file = true;
        gpufeed::image_folder checking{dir.path(), o};
        for (std::uint64_t seed = 0; seed < 8; ++seed) {
          for (std::size_t i = 0; i < stopping.size(); ++i) {
            auto const stopped = read_pixels(stopping, i, seed);  // after the previous image
            ASSERT_EQ(stopped, read_pixels(checking, i, seed))
                << stopping.entries()[i].path << ", seed " << seed << ", output " << size
                << (planar ? ", planar" : ", RGB")
                << (resize == resize_mode::center_crop ? ", centre" : ", random");
          }
        }
        // The planar path decodes the progressive files from the top down to the crop's last
        // row when it stops and every row when it reads to the end (the others, where
        // partial_planes_built(), only the iMCUs under the crop either way); the cropped RGB
        // path decodes the crop's rows either way.
        auto const stopped_pixels = stopping.stage_times().decoded_pixels;
        auto const checked_pixels = checking.stage_times().decoded_pixels;
        std::string const what = "output " + std::to_string(size) +
                                 (resize == resize_mode::center_crop ? ", centre" : ", random");
        if (planar) {
          EXPECT_LT(stopped_pixels, checked_pixels) << what;
        } else {
          EXPECT_EQ(stopped_pixels, checked_pixels) << what;
        }
      }
    }
  }
}

// A file damaged or cut off below the crop: an error naming the file and the sample by default;
// with check_whole_file = false the crop decodes, to the pixels of the undamaged file. Damage
// inside the rows the crop needs is an error either way.
TEST(image_decode_test, CheckWholeFileDecidesOnDamageBelowTheCrop) {
  temp_dir dir;
  auto const good = encode_jpeg(make_photo(256, 512, 3), {});
  std::size_t const scan = scan_start(good);
  ASSERT_GT(scan, 0U);
  std::vector<unsigned char> const cut(  // the last 15 % of the scan and the end marker gone
      good.begin(),
      good.begin() + static_cast<std::ptrdiff_t>(scan + (good.size() - scan) * 85 / 100));
  std::vector<std::string> const names{"good.jpg", "damaged-below.jpg", "cut-below.jpg",
                                       "damaged-inside.jpg"};
  write_bytes(dir.path() / names[0], good);
  write_bytes(dir.path() / names[1], with_bad_markers(good, 0.95));
  write_bytes(dir.path() / names[2], cut);
  write_bytes(dir.path() / names[3], with_bad_markers(good, 0.5));
  auto const csv = dir.path() / "list.csv";
  {
    std::FILE* f = std::fopen(csv.c_str(), "w");
    ASSERT_NE(f, nullptr);
    for (std::size_t i = 0; i < names.size(); ++i) {
      std::fprintf(f, "%s,%zu\n", names[i].c_str(), i);
    }
    std::fclose(f);
  }
  auto const expect_corrupt = [&](gpufeed::dataset const& d, std::size_t i,
                                  std::string const& what) {
    try {
      (void)read_pixels(d, i, 0);
      ADD_FAILURE() << names[i] << " was decoded (" << what << ")";
    } catch (gpufeed::file_error const& e) {
      EXPECT_EQ(e.path(), (dir.path() / names[i]).string()) << e.what();
    }
  };
  // The centre 224 x 224 of a 256 x 512 image scaled by 7/8: source rows 128 .. 384 of 512.
  for (bool planar : {true, false}) {
    for (bool cropped : {true, false}) {
      std::string const what =
          std::string{planar ? "planar" : "RGB"} + (cropped ? ", cropped" : ", whole");
      image_options o{.resize_to = 224, .check_whole_file = false};
      scoped_decode_strategy const strategy{{.cropped = cropped, .planar = planar}};
      gpufeed::file_list stopping{csv, o};
      auto const want = read_pixels(stopping, 0, 0);
      if (planar || cropped) {
        EXPECT_EQ(read_pixels(stopping, 1, 0), want) << what;
        EXPECT_EQ(read_pixels(stopping, 2, 0), want) << what;
      } else {  // the RGB path without cropped decoding decodes every row
        expect_corrupt(stopping, 1, what + ", stopping");
        expect_corrupt(stopping, 2, what + ", stopping");
      }
      expect_corrupt(stopping, 3, what + ", stopping");
      o.check_whole_file = true;
      gpufeed::file_list checking{csv, o};
      EXPECT_EQ(read_pixels(checking, 0, 0), want) << what;
      for (std::size_t i = 1; i < names.size(); ++i) expect_corrupt(checking, i, what);
    }
  }
  // Through a loader, the default's error names the file and the sample.
  auto const d = std::make_shared<gpufeed::file_list>(csv, image_options{.resize_to = 224});
  gpufeed::loader l{d, gpufeed::loader_options{.batch_size = 1, .workers = 1}};
  std::set<std::size_t> failed;
  for (std::size_t s = 0; s < names.size(); ++s) {
    try {
      auto b = l.next();
      ASSERT_TRUE(b.has_value());
      EXPECT_EQ(b->indices()[0], 0U);
    } catch (gpufeed::sample_error const& e) {
      EXPECT_EQ(e.file(), (dir.path() / names[e.index()]).string()) << e.what();
      EXPECT_NE(std::string{e.what()}.find(names[e.index()]), std::string::npos) << e.what();
      failed.insert(e.index());
    }
  }
  EXPECT_EQ(failed, (std::set<std::size_t>{1, 2, 3}));
}
