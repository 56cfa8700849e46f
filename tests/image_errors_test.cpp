// Damaged, truncated and unreadable files in the image datasets: a file_error naming the file
// when read directly, a sample_error naming it through the loader, and under
// error_policy::skip every bad sample counted and listed.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpufeed/datasets/file_list.hpp"
#include "gpufeed/datasets/image_folder.hpp"
#include "gpufeed/gpufeed.hpp"
#include "image/decode/jpeg_decode.hpp"
#include "image/pipeline/decode_strategy.hpp"
#include "support/gdal_tsan_suppression.hpp"
#include "support/image_fixtures.hpp"
#include "support/image_samples.hpp"

namespace {

namespace fs = std::filesystem;
using gpufeed::image_options;
using gpufeed::resize_mode;
using gpufeed::detail::scoped_decode_strategy;
using gpufeed::test::encode;
using gpufeed::test::make_noise;
using gpufeed::test::make_picture;
using gpufeed::test::pixels;
using gpufeed::test::read_sample;
using gpufeed::test::temp_dir;
using gpufeed::test::write_bytes;

// [begin, end) of a JPEG's entropy-coded data: after the first SOS segment, before the final EOI.
std::pair<std::size_t, std::size_t> scan_data(std::vector<unsigned char> const& jpeg) {
  for (std::size_t i = 2; i + 3 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) {
      return {i + 2 + ((std::size_t{jpeg[i + 2]} << 8U) | jpeg[i + 3]), jpeg.size() - 2};
    }
  }
  return {0, 0};
}

// Bad inputs; each case writes its files under its own temporary folder.
class image_errors_test : public ::testing::Test {
 protected:
  [[nodiscard]] fs::path scratch() const { return dir_.path(); }

 private:
  temp_dir dir_;
};

// A complete JPEG whose entropy-coded data is damaged: cv::imdecode decodes it into a garbled
// picture with only a libjpeg warning on stderr; gpufeed's decode makes it an error naming the
// file, at full and at reduced size.
TEST_F(image_errors_test, DamagedScanDataIsAnError) {
  auto const dir = scratch() / "damaged";
  auto const good = encode(make_noise(320, 240), ".jpg");
  auto const [begin, end] = scan_data(good);
  ASSERT_GT(end, begin + 10000U) << "the fixture's scan should be long";
  std::size_t const middle = (begin + end) / 2;
  auto restart_markers = good;  // RST3 where no restart belongs: "premature end of data segment"
  for (std::size_t i = 0; i < 16; i += 2) {
    restart_markers[middle + i] = 0xFF;
    restart_markers[middle + i + 1] = 0xD3;
  }
  auto zeroed = good;  // the decoder loses step: "extraneous bytes before marker 0xd9"
  std::fill_n(zeroed.begin() + static_cast<std::ptrdiff_t>(middle), 16, 0);
  for (auto const* damaged : {&restart_markers, &zeroed}) {  // what the old decode did
    ASSERT_TRUE((gpufeed::detail::jpeg_reader{*damaged, "damaged.jpg"}.complete()));
    ASSERT_FALSE(cv::imdecode(*damaged, cv::IMREAD_COLOR).empty());
  }
  write_bytes(dir / "good.jpg", good);
  write_bytes(dir / "restart-markers.jpg", restart_markers);
  write_bytes(dir / "zeroed.jpg", zeroed);
  std::vector<std::string> const names{"good.jpg", "restart-markers.jpg", "zeroed.jpg"};
  auto const csv = dir / "list.csv";
  {
    std::ofstream out{csv};
    for (std::size_t i = 0; i < names.size(); ++i) out << names[i] << ',' << i << '\n';
  }
  for (bool reduced : {true, false}) {  // 16 x 16 from 320 x 240 decodes at 1/8
    scoped_decode_strategy const strategy{{.reduced = reduced}};
    gpufeed::file_list d{csv, image_options{.height = 16, .width = 16}};
    EXPECT_EQ(read_sample(d, 0).label, 0);
    for (std::size_t i = 1; i < names.size(); ++i) {
      try {
        (void)read_sample(d, i);
        ADD_FAILURE() << names[i] << " was decoded (reduced: " << reduced << ")";
      } catch (gpufeed::file_error const& e) {
        EXPECT_EQ(e.path(), (dir / names[i]).string());
        EXPECT_NE(std::string{e.what()}.find("corrupt JPEG"), std::string::npos) << e.what();
      }
    }
  }

  auto const d =
      std::make_shared<gpufeed::file_list>(csv, image_options{.height = 16, .width = 16});
  {  // raise: a sample_error with the file and the index
    gpufeed::loader l{d, gpufeed::loader_options{.batch_size = 1, .workers = 2}};
    std::set<std::size_t> failed;
    std::size_t delivered = 0;
    for (std::size_t s = 0; s < names.size(); ++s) {
      try {
        auto b = l.next();
        ASSERT_TRUE(b.has_value());
        EXPECT_EQ(b->indices()[0], 0U);
        ++delivered;
      } catch (gpufeed::sample_error const& e) {
        EXPECT_EQ(e.file(), (dir / names[e.index()]).string()) << e.what();
        failed.insert(e.index());
      }
    }
    EXPECT_FALSE(l.next().has_value());
    EXPECT_EQ(delivered, 1U);
    EXPECT_EQ(failed, (std::set<std::size_t>{1, 2}));
  }
  {  // skip: both counted and listed
    gpufeed::loader l{d,
                      gpufeed::loader_options{
                          .batch_size = 3, .workers = 2, .on_error = gpufeed::error_policy::skip}};
    std::size_t samples = 0;
    while (auto b = l.next()) samples += b->size();
    EXPECT_EQ(samples, 1U);
    auto const s = l.snapshot();
    EXPECT_EQ(s.skipped, 2U);
    std::vector<std::size_t> listed = s.skipped_indices;
    std::sort(listed.begin(), listed.end());
    EXPECT_EQ(listed, (std::vector<std::size_t>{1, 2}));
  }
}

// A damaged PNG read on a thread that has decoded a good one is an error, never that earlier
// image again: OpenCV leaves its output untouched when it cannot read a PNG's header, so a
// decode into a reused per-thread image would hand back the last picture it held.
TEST_F(image_errors_test, ADamagedPngAfterAGoodOneIsAnError) {
  temp_dir dir;
  auto const good = encode(make_picture(32, 24, 5), ".png");
  auto bad_header = good;  // the signature, then an IHDR chunk whose length and type are gone
  std::fill(bad_header.begin() + 8, bad_header.begin() + 16, 0xEE);
  auto cut = good;  // the header, then half the image data
  cut.resize(good.size() / 2);
  write_bytes(dir.path() / "c" / "0-good.png", good);
  write_bytes(dir.path() / "c" / "1-bad-header.png", bad_header);
  write_bytes(dir.path() / "c" / "2-cut.png", cut);
  gpufeed::image_folder d{dir.path(), image_options{.height = 24, .width = 32, .resize_to = 24}};
  ASSERT_EQ(d.size(), 3U);
  for (std::size_t bad : {1U, 2U}) {
    (void)read_sample(d, 0);  // this thread's last decode: a good picture
    try {
      (void)read_sample(d, bad);
      ADD_FAILURE() << "damaged PNG " << bad << " was read without an error";
    } catch (gpufeed::file_error const& e) {
      EXPECT_NE(e.path().find(bad == 1 ? "1-bad-header.png" : "2-cut.png"), std::string::npos)
          << e.what();
    }
  }
}

// Each bad file gives a sample_error naming it through the loader, and under error_policy::skip
// the epoch completes with every bad sample counted and listed.
TEST_F(image_errors_test, BadInputsNameTheFile) {
  auto const dir = scratch() / "bad";
  fs::create_directories(dir);
  auto const good_jpeg = encode(make_picture(64, 48, 3), ".jpg");
  auto const good_png = encode(make_picture(64, 48, 3), ".png");
  std::vector<unsigned char> garbage(3000);
  for (std::size_t i = 0; i < garbage.size(); ++i) {
    garbage[i] = static_cast<unsigned char>((i * 7919U + 13U) % 251U);
  }
  auto garbage_jpeg = garbage;  // a JPEG start, then noise
  garbage_jpeg[0] = 0xFF;
  garbage_jpeg[1] = 0xD8;
  garbage_jpeg[2] = 0xFF;
  garbage_jpeg[3] = 0xDB;
  auto jpeg_header_only = good_jpeg;  // markers intact, scan cut short
  jpeg_header_only.resize(good_jpeg.size() / 2);
  auto png_cut = good_png;
  png_cut.resize(good_png.size() * 2 / 3);

  write_bytes(dir / "good.jpg", good_jpeg);
  write_bytes(dir / "empty.jpg", {});
  write_bytes(dir / "truncated.jpg", jpeg_header_only);
  write_bytes(dir / "short.jpg", {good_jpeg.begin(), good_jpeg.begin() + 100});
  write_bytes(dir / "garbage.jpg", garbage_jpeg);
  write_bytes(dir / "garbage.png", garbage);
  write_bytes(dir / "truncated.png", png_cut);
  std::vector<unsigned char> gif{'G', 'I', 'F', '8', '9', 'a'};  // a format no build reads
  gif.insert(gif.end(), garbage.begin(), garbage.begin() + 200);
  write_bytes(dir / "animation.jpg", gif);
  write_bytes(dir / "vanished.jpg", good_jpeg);
  fs::create_directories(dir / "directory.jpg");
  std::vector<std::string> const names{"good.jpg",      "empty.jpg",    "truncated.jpg",
                                       "short.jpg",     "garbage.jpg",  "garbage.png",
                                       "truncated.png", "vanished.jpg", "directory.jpg",
                                       "missing.png",   "animation.jpg"};
  auto const csv = dir / "list.csv";
  {
    std::ofstream out{csv};
    for (std::size_t i = 0; i < names.size(); ++i) out << names[i] << ',' << i << '\n';
  }
  auto const d =
      std::make_shared<gpufeed::file_list>(csv, image_options{.height = 16, .width = 16});
  fs::remove(dir / "vanished.jpg");

  // Each bad file alone, directly: a file_error naming it (never exit(), never black pixels).
  for (std::size_t i = 1; i < names.size(); ++i) {
    try {
      (void)read_sample(*d, i);
      ADD_FAILURE() << names[i] << " was read without an error";
    } catch (gpufeed::file_error const& e) {
      EXPECT_EQ(e.path(), (dir / names[i]).string()) << e.what();
    }
  }
  EXPECT_EQ(read_sample(*d, 0).label, 0);

  {  // raise: every bad sample's batch throws a sample_error naming the file.
    gpufeed::loader l{d, gpufeed::loader_options{.batch_size = 1, .workers = 3}};
    std::set<std::string> failed;
    std::size_t delivered = 0;
    for (std::size_t s = 0; s < names.size(); ++s) {
      try {
        auto b = l.next();
        ASSERT_TRUE(b.has_value());
        ++delivered;
        EXPECT_EQ(b->indices()[0], 0U);
      } catch (gpufeed::sample_error const& e) {
        EXPECT_EQ(e.file(), (dir / names[e.index()]).string()) << e.what();
        failed.insert(fs::path{e.file()}.filename().string());
      }
    }
    EXPECT_FALSE(l.next().has_value());
    EXPECT_EQ(delivered, 1U);
    EXPECT_EQ(failed.size(), names.size() - 1);
  }
  {  // skip: the epoch completes; the skips are counted and listed.
    gpufeed::loader l{d,
                      gpufeed::loader_options{
                          .batch_size = 4, .workers = 2, .on_error = gpufeed::error_policy::skip}};
    std::size_t samples = 0;
    while (auto b = l.next()) samples += b->size();
    EXPECT_EQ(samples, 1U);
    auto const s = l.snapshot();
    EXPECT_EQ(s.skipped, names.size() - 1);
    std::vector<std::size_t> listed = s.skipped_indices;
    std::sort(listed.begin(), listed.end());
    std::vector<std::size_t> want(names.size() - 1);
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = i + 1;
    EXPECT_EQ(listed, want);
  }
}

}  // namespace
