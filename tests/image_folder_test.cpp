// The image datasets: image_folder (torchvision's ImageFolder layout) and file_list (CSV): how
// they list and label their files, their errors at construction, and the crop, flip and
// augmentation of the pipeline they share. Fixtures are written by the tests with OpenCV.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <opencv2/core.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpufeed/datasets/file_list.hpp"
#include "gpufeed/datasets/image_folder.hpp"
#include "gpufeed/gpufeed.hpp"
#include "support/gdal_tsan_suppression.hpp"
#include "support/image_fixtures.hpp"
#include "support/image_samples.hpp"
#include "support/reference_resize.hpp"

namespace {

namespace fs = std::filesystem;
using gpufeed::image_options;
using gpufeed::resize_mode;
using gpufeed::test::encode;
using gpufeed::test::make_picture;
using gpufeed::test::max_abs_diff;
using gpufeed::test::pixels;
using gpufeed::test::read_sample;
using gpufeed::test::rgb_bytes;
using gpufeed::test::temp_dir;
using gpufeed::test::write_bytes;

// root/{cat,ant,bird}/: 8 images each, alternating 64x48 JPEG and 40x80 PNG, one with an
// upper-case extension, one in a sub-folder, plus files that are not images.
class image_folder_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new temp_dir;
    auto const root = dir_->path() / "folder";
    int variant = 0;
    for (std::string const cls : {"cat", "ant", "bird"}) {
      for (int i = 7; i >= 0; --i) {
        bool const jpeg = i % 2 == 0;
        auto const image = jpeg ? make_picture(64, 48, variant) : make_picture(40, 80, variant);
        std::string name = "img" + std::to_string(i) + (jpeg ? ".jpg" : ".png");
        if (cls == "bird" && i == 3) name = "img3.PNG";
        fs::path const at = cls == "ant" && i == 5 ? root / cls / "sub" / name : root / cls / name;
        write_bytes(at, encode(image, jpeg ? ".jpg" : ".png"));
        ++variant;
      }
    }
    write_bytes(root / "ant" / "notes.txt", {'h', 'i'});
    write_bytes(root / "README", {'h', 'i'});
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static fs::path root() { return dir_->path() / "folder"; }
  static fs::path scratch() { return dir_->path(); }

  static temp_dir* dir_;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
};

temp_dir* image_folder_test::dir_ = nullptr;

TEST_F(image_folder_test, ClassesSortedAndLabelledLikeTorchvision) {
  gpufeed::image_folder d{root(), image_options{.height = 16, .width = 16}};
  EXPECT_EQ(d.classes(), (std::vector<std::string>{"ant", "bird", "cat"}));
  ASSERT_EQ(d.size(), 24U);
  auto const& e = d.entries();
  for (std::size_t i = 0; i < e.size(); ++i) {
    EXPECT_EQ(e[i].label, static_cast<std::int64_t>(i / 8)) << e[i].path;
  }
  // Within a class: sorted by (directory, name), as sorted(os.walk()) then sorted(files).
  auto const ant = root() / "ant";
  EXPECT_EQ(e[0].path, (ant / "img0.jpg").string());
  EXPECT_EQ(e[4].path, (ant / "img4.jpg").string());
  EXPECT_EQ(e[5].path, (ant / "img6.jpg").string());
  EXPECT_EQ(e[7].path, (ant / "sub" / "img5.png").string());
  EXPECT_EQ(e[8 + 3].path, (root() / "bird" / "img3.PNG").string());
  EXPECT_EQ(d.spec().to_string(), "image:uint8[16,16,3] label:int64[]");
  auto const s = read_sample(d, 17);
  EXPECT_EQ(s.label, 2);
  EXPECT_EQ(s.image.size(), 16U * 16U * 3U);
}

TEST_F(image_folder_test, ConstructionErrorsNameThePath) {
  auto const missing = scratch() / "no-such-folder";
  try {
    gpufeed::image_folder d{missing};
    FAIL() << "a missing root was accepted";
  } catch (gpufeed::file_error const& e) {
    EXPECT_EQ(e.path(), missing.string());
  }
  auto const flat = scratch() / "flat";
  write_bytes(flat / "a.jpg", encode(make_picture(8, 8, 0), ".jpg"));
  try {
    gpufeed::image_folder d{flat};
    FAIL() << "a root without class directories was accepted";
  } catch (gpufeed::file_error const& e) {
    EXPECT_EQ(e.path(), flat.string());
    EXPECT_NE(std::string{e.what()}.find("no class"), std::string::npos) << e.what();
  }
  auto const empty_class = scratch() / "empty-class";
  write_bytes(empty_class / "a" / "x.png", encode(make_picture(8, 8, 0), ".png"));
  write_bytes(empty_class / "b" / "x.txt", {'x'});
  try {
    gpufeed::image_folder d{empty_class};
    FAIL() << "a class without images was accepted";
  } catch (gpufeed::file_error const& e) {
    EXPECT_EQ(e.path(), (empty_class / "b").string());
  }
  EXPECT_THROW(gpufeed::image_folder(root(), image_options{.height = 0}), gpufeed::logic_error);
  EXPECT_THROW(gpufeed::image_folder(root(), image_options{.jitter = {.hue = 0.7F}}),
               gpufeed::logic_error);
}

TEST_F(image_folder_test, FileListReadsCsvWithHeaderAndRelativePaths) {
  auto const dir = scratch() / "lists";
  fs::create_directories(dir / "imgs");
  fs::copy_file(root() / "cat" / "img1.png", dir / "imgs" / "a, b.png",
                fs::copy_options::overwrite_existing);
  auto const csv = dir / "train.csv";
  {
    std::ofstream out{csv, std::ios::binary};
    out << "path,label\r\n"
        << "\"imgs/a, b.png\",7\r\n"
        << "\r\n"
        << (root() / "ant" / "img0.jpg").string() << " , 2\n"
        << "../folder/bird/img2.jpg,-1\n";
  }
  gpufeed::file_list d{csv, image_options{.height = 20, .width = 12}};
  ASSERT_EQ(d.size(), 3U);
  EXPECT_EQ(d.entries()[0], (gpufeed::image_entry{(dir / "imgs/a, b.png").string(), 7}));
  EXPECT_EQ(d.entries()[1], (gpufeed::image_entry{(root() / "ant/img0.jpg").string(), 2}));
  EXPECT_EQ(d.entries()[2], (gpufeed::image_entry{(dir / "../folder/bird/img2.jpg").string(), -1}));
  EXPECT_EQ(d.spec().to_string(), "image:uint8[20,12,3] label:int64[]");
  // The same file through image_folder gives the same pixels.
  gpufeed::image_folder f{root(), image_options{.height = 20, .width = 12}};
  auto const from_list = read_sample(d, 0, 99);
  EXPECT_EQ(from_list.label, 7);
  EXPECT_EQ(from_list.image, read_sample(f, 16 + 1, 99).image);  // cat/img1.png

  // No header: the first row is data.
  auto const plain = dir / "plain.csv";
  std::ofstream{plain} << "imgs/a, b.png,1\n";  // unquoted comma: 3 fields
  try {
    gpufeed::file_list bad{plain};
    FAIL() << "a row with 3 fields was accepted";
  } catch (gpufeed::file_error const& e) {
    EXPECT_EQ(e.path(), plain.string());
    EXPECT_NE(std::string{e.what()}.find("line 1"), std::string::npos) << e.what();
  }
}

TEST_F(image_folder_test, FileListBadRowNamesFileAndLine) {
  auto const dir = scratch() / "bad-lists";
  fs::create_directories(dir);
  auto expect_line = [&](std::string const& name, std::string const& text, int line) {
    auto const csv = dir / name;
    std::ofstream{csv} << text;
    try {
      gpufeed::file_list d{csv};
      ADD_FAILURE() << name << " was accepted";
    } catch (gpufeed::file_error const& e) {
      EXPECT_EQ(e.path(), csv.string());
      EXPECT_NE(std::string{e.what()}.find("line " + std::to_string(line) + ":"), std::string::npos)
          << e.what();
    }
  };
  expect_line("label.csv", "path,label\na.jpg,1\nb.jpg,one\n", 3);
  expect_line("fields.csv", "a.jpg,1\n\nb.jpg\n", 3);
  expect_line("quote.csv", "a.jpg,1\n\"b.jpg,2\n", 2);
  expect_line("empty-path.csv", "path,label\n,4\n", 2);
  expect_line("overflow.csv", "a.jpg,99999999999999999999\n", 1);
  auto const header_only = dir / "header-only.csv";
  std::ofstream{header_only} << "path,label\n";
  EXPECT_THROW(gpufeed::file_list{header_only}, gpufeed::file_error);
  try {
    gpufeed::file_list d{dir / "missing.csv"};
    ADD_FAILURE() << "a missing CSV was accepted";
  } catch (gpufeed::file_error const& e) {
    EXPECT_EQ(e.path(), (dir / "missing.csv").string());
  }
}

// A lossless PNG through center_crop equals the reference crop-and-resize (torchvision's
// Resize + CenterCrop as one crop of the source, antialiased bilinear), within a grey level.
TEST_F(image_folder_test, CenterCropEqualsTheReferenceResize) {
  auto const source = make_picture(64, 48, 5);
  auto const png = scratch() / "center" / "a" / "x.png";
  write_bytes(png, encode(source, ".png"));
  // Shorter side 48 -> 24 (exactly half), then the centre 24 x 16 of 32 x 24: in the source,
  // the 48 x 32 box at (8, 8).
  gpufeed::image_folder d{png.parent_path().parent_path(),
                          image_options{.height = 16, .width = 24, .resize_to = 24}};
  auto const want = rgb_bytes(gpufeed::test::reference_resize(source, {8, 8, 48, 32}, 24, 16));
  EXPECT_LE(max_abs_diff(read_sample(d, 0).image, want), 1);

  // The default resize_to scales the shorter side to size * 256 / 224 before cropping.
  gpufeed::image_folder d2{png.parent_path().parent_path(),
                           image_options{.height = 21, .width = 21}};  // resize_to = 24
  // torchvision's offsets: round((32 - 21) / 2) = 6, round((24 - 21) / 2) = 2, at half scale.
  auto const want2 = rgb_bytes(gpufeed::test::reference_resize(source, {12, 4, 42, 42}, 21, 21));
  EXPECT_LE(max_abs_diff(read_sample(d2, 0).image, want2), 1);
  // Not a tolerance that anything passes: a crop one pixel off is further away.
  auto const shifted = rgb_bytes(gpufeed::test::reference_resize(source, {14, 4, 42, 42}, 21, 21));
  EXPECT_GT(max_abs_diff(read_sample(d2, 0).image, shifted), 1);
}

// Collects every sample of epochs 0 and 1 through a shuffled loader with `workers` workers.
std::map<std::pair<std::uint64_t, std::size_t>, pixels> collect(
    std::shared_ptr<gpufeed::dataset const> const& d, unsigned workers) {
  gpufeed::loader l{
      d,
      gpufeed::loader_options{
          .batch_size = 5, .workers = workers, .prefetch_depth = 3, .shuffle = true, .seed = 2024}};
  std::map<std::pair<std::uint64_t, std::size_t>, pixels> out;
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    l.set_epoch(epoch);
    while (auto b = l.next()) {
      auto const image = b->field("image").as<std::uint8_t>();
      auto const per = image.size() / b->size();
      for (std::size_t k = 0; k < b->size(); ++k) {
        auto const first = image.begin() + static_cast<std::ptrdiff_t>(k * per);
        out[{epoch, b->indices()[k]}] = pixels(first, first + static_cast<std::ptrdiff_t>(per));
      }
    }
  }
  return out;
}

TEST_F(image_folder_test, AugmentationIsDeterministicAcrossWorkerCounts) {
  auto const d = std::make_shared<gpufeed::image_folder>(
      root(),
      image_options{
          .height = 24,
          .width = 24,
          .resize = resize_mode::random_resized_crop,
          .horizontal_flip = true,
          .jitter = {.brightness = 0.4F, .contrast = 0.4F, .saturation = 0.4F, .hue = 0.1F}});
  auto const one = collect(d, 1);
  ASSERT_EQ(one.size(), 48U);
  EXPECT_EQ(collect(d, 3), one);
  EXPECT_EQ(collect(d, 8), one);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < d->size(); ++i) {
    if (one.at({0, i}) != one.at({1, i})) ++differ;
  }
  EXPECT_GE(differ, 22U) << "epochs 0 and 1 should crop, flip and jitter differently";
  // The same seed on a direct read gives the same pixels twice; another seed another image.
  EXPECT_EQ(read_sample(*d, 3, 77).image, read_sample(*d, 3, 77).image);
  EXPECT_NE(read_sample(*d, 3, 77).image, read_sample(*d, 3, 78).image);
}

TEST_F(image_folder_test, FlipMirrorsTheImage) {
  auto const dir = scratch() / "flip" / "c";
  auto const picture = make_picture(20, 10, 1);
  write_bytes(dir / "x.png", encode(picture, ".png"));
  gpufeed::image_folder plain{dir.parent_path(),
                              image_options{.height = 10, .width = 20, .resize_to = 10}};
  gpufeed::image_folder flips{
      dir.parent_path(),
      image_options{.height = 10, .width = 20, .resize_to = 10, .horizontal_flip = true}};
  cv::Mat mirrored;
  cv::flip(picture, mirrored, 1);
  std::set<int> seen;
  for (std::uint64_t seed = 0; seed < 16; ++seed) {
    auto const got = read_sample(flips, 0, seed).image;
    if (got == rgb_bytes(picture)) {
      seen.insert(0);
    } else {
      EXPECT_EQ(got, rgb_bytes(mirrored)) << "seed " << seed;
      seen.insert(1);
    }
  }
  EXPECT_EQ(seen.size(), 2U) << "16 seeds should both flip and not flip";
  EXPECT_EQ(read_sample(plain, 0, 3).image, rgb_bytes(picture));
}

}  // namespace
