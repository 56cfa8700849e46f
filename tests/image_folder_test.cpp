// The image datasets: image_folder (torchvision's ImageFolder layout), file_list (CSV) and the
// decode + transform pipeline they share. Fixtures are written by the tests with OpenCV, except
// two tiny CMYK and YCCK JPEGs (OpenCV cannot write those), embedded below.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpufeed/datasets/file_list.hpp"
#include "gpufeed/datasets/image_folder.hpp"
#include "gpufeed/detail/image_pipeline.hpp"
#include "image/decode/jpeg_decode.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/gpufeed.hpp"
#include "support/gdal_tsan_suppression.hpp"
#include "support/image_fixtures.hpp"
#include "support/reference_resize.hpp"

namespace {

namespace fs = std::filesystem;
using gpufeed::image_options;
using gpufeed::resize_mode;
using gpufeed::test::encode;
using gpufeed::test::make_picture;
using gpufeed::test::temp_dir;
using gpufeed::test::write_bytes;
using pixels = std::vector<std::uint8_t>;

struct sample {
  pixels image;
  std::int64_t label = -1;
};

sample read_one(gpufeed::dataset const& d, std::size_t index, std::uint64_t seed = 0) {
  gpufeed::detail::slot_layout layout{d.spec(), 1};
  std::vector<std::byte> slot(layout.slot_bytes(), std::byte{0xAB});
  gpufeed::read_context ctx;
  ctx.index = index;
  ctx.seed = seed;
  gpufeed::sample_view view{layout, slot.data(), 0};
  d.read(index, view, ctx);
  auto image = view.as<std::uint8_t>(0);
  return {pixels(image.begin(), image.end()), view.as<std::int64_t>(1)[0]};
}

// Our output of a BGR OpenCV image: RGB bytes, HWC.
pixels rgb_bytes(cv::Mat const& bgr) {
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  return {rgb.datastart, rgb.dataend};
}

int max_abs_diff(pixels const& a, pixels const& b) {
  if (a.size() != b.size()) return 256;
  int most = 0;
  for (std::size_t i = 0; i < a.size(); ++i) most = std::max(most, std::abs(int{a[i]} - int{b[i]}));
  return most;
}

double mean_abs_diff(pixels const& a, pixels const& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += std::abs(int{a[i]} - int{b[i]});
  return a.empty() ? 0 : sum / static_cast<double>(a.size());
}

// A BGR picture of hashed noise: JPEG compresses it poorly, so its scan is long.
cv::Mat make_noise(int width, int height) {
  cv::Mat image(height, width, CV_8UC3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        auto v = static_cast<std::uint32_t>(x) * 73856093U ^
                 static_cast<std::uint32_t>(y) * 19349663U ^
                 static_cast<std::uint32_t>(c) * 83492791U;
        v = (v ^ (v >> 13U)) * 0x5bd1e995U;
        image.at<cv::Vec3b>(y, x)[c] = static_cast<std::uint8_t>(v ^ (v >> 15U));
      }
    }
  }
  return image;
}

// [begin, end) of a JPEG's entropy-coded data: after the first SOS segment, before the final EOI.
std::pair<std::size_t, std::size_t> scan_data(std::vector<unsigned char> const& jpeg) {
  for (std::size_t i = 2; i + 3 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) {
      return {i + 2 + ((std::size_t{jpeg[i + 2]} << 8U) | jpeg[i + 3]), jpeg.size() - 2};
    }
  }
  return {0, 0};
}

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
  auto const s = read_one(d, 17);
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
  auto const from_list = read_one(d, 0, 99);
  EXPECT_EQ(from_list.label, 7);
  EXPECT_EQ(from_list.image, read_one(f, 16 + 1, 99).image);  // cat/img1.png

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
  EXPECT_LE(max_abs_diff(read_one(d, 0).image, want), 1);

  // The default resize_to scales the shorter side to size * 256 / 224 before cropping.
  gpufeed::image_folder d2{png.parent_path().parent_path(),
                           image_options{.height = 21, .width = 21}};  // resize_to = 24
  // torchvision's offsets: round((32 - 21) / 2) = 6, round((24 - 21) / 2) = 2, at half scale.
  auto const want2 = rgb_bytes(gpufeed::test::reference_resize(source, {12, 4, 42, 42}, 21, 21));
  EXPECT_LE(max_abs_diff(read_one(d2, 0).image, want2), 1);
  // Not a tolerance that anything passes: a crop one pixel off is further away.
  auto const shifted = rgb_bytes(gpufeed::test::reference_resize(source, {14, 4, 42, 42}, 21, 21));
  EXPECT_GT(max_abs_diff(read_one(d2, 0).image, shifted), 1);
}

TEST_F(image_folder_test, DecodesByContentNotExtension) {
  auto const dir = scratch() / "content" / "c";
  auto const picture = make_picture(40, 30, 9);
  auto const jpeg = encode(picture, ".jpg");
  write_bytes(dir / "real.png", encode(picture, ".png"));
  write_bytes(dir / "png-named.jpg", encode(picture, ".png"));
  write_bytes(dir / "jpeg-named.png", jpeg);
  gpufeed::image_folder d{dir.parent_path(),
                          image_options{.height = 30, .width = 40, .resize_to = 30}};
  ASSERT_EQ(d.size(), 3U);
  auto const a = read_one(d, 1);  // png-named.jpg
  auto const b = read_one(d, 2);  // real.png
  EXPECT_EQ(a.image, b.image);
  EXPECT_EQ(a.image, rgb_bytes(picture));  // same size: a plain copy, RGB
  EXPECT_EQ(read_one(d, 0).image, rgb_bytes(cv::imdecode(jpeg, cv::IMREAD_COLOR)));
}

// Grey, CMYK and YCCK JPEGs become RGB as cv::imdecode makes them (CMYK within a grey level or
// two: the conversion rounds where OpenCV's shifts).
TEST_F(image_folder_test, GreyCmykAndYcckJpegsDecode) {
  auto const dir = scratch() / "colour-spaces" / "c";
  cv::Mat grey;
  cv::cvtColor(make_picture(40, 30, 4), grey, cv::COLOR_BGR2GRAY);
  auto const grey_jpeg = encode(grey, ".jpg");
  write_bytes(dir / "cmyk.jpg", {cmyk_jpeg.begin(), cmyk_jpeg.end()});
  write_bytes(dir / "grey.jpg", grey_jpeg);
  write_bytes(dir / "ycck.jpg", {ycck_jpeg.begin(), ycck_jpeg.end()});

  gpufeed::image_folder g{dir.parent_path(),
                          image_options{.height = 30, .width = 40, .resize_to = 30}};
  auto const grey_rgb = read_one(g, 1).image;
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
    auto const got = read_one(d, index).image;
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
  EXPECT_EQ(read_one(*d, 3, 77).image, read_one(*d, 3, 77).image);
  EXPECT_NE(read_one(*d, 3, 77).image, read_one(*d, 3, 78).image);
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
    auto const got = read_one(flips, 0, seed).image;
    if (got == rgb_bytes(picture)) {
      seen.insert(0);
    } else {
      EXPECT_EQ(got, rgb_bytes(mirrored)) << "seed " << seed;
      seen.insert(1);
    }
  }
  EXPECT_EQ(seen.size(), 2U) << "16 seeds should both flip and not flip";
  EXPECT_EQ(read_one(plain, 0, 3).image, rgb_bytes(picture));
}

TEST_F(image_folder_test, ReducedDecodingIsCloseToFullDecoding) {
  auto const dir = scratch() / "reduced" / "c";
  auto const picture = make_picture(512, 384, 2);
  auto const jpeg = encode(picture, ".jpg");
  write_bytes(dir / "big.jpg", jpeg);
  gpufeed::detail::jpeg_reader const header{jpeg, "big.jpg"};
  EXPECT_EQ(header.width(), 512);
  EXPECT_EQ(header.height(), 384);
  EXPECT_TRUE(header.complete());
  for (auto mode : {resize_mode::center_crop, resize_mode::random_resized_crop}) {
    image_options o{.height = 32, .width = 32, .resize = mode};  // 1/8 decode for center_crop
    gpufeed::image_folder reduced{dir.parent_path(), o};
    o.reduced_decoding = false;
    gpufeed::image_folder full{dir.parent_path(), o};
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      auto const a = read_one(reduced, 0, seed).image;
      auto const b = read_one(full, 0, seed).image;
      EXPECT_LT(mean_abs_diff(a, b), 3.0) << "seed " << seed;
    }
  }
}

// At 1/2, 1/4 and 1/8 the pixels are exactly cv::imdecode's IMREAD_REDUCED_COLOR_* (the same
// libjpeg scaling), and without reduction a full decode shrunk by the reference resize.
TEST_F(image_folder_test, ReducedDecodingGivesOpenCvPixels) {
  auto const dir = scratch() / "reduced-exact" / "c";
  auto const jpeg = encode(make_noise(512, 384), ".jpg");
  write_bytes(dir / "big.jpg", jpeg);
  for (auto [factor, flag] :
       {std::pair{2, cv::IMREAD_REDUCED_COLOR_2}, std::pair{4, cv::IMREAD_REDUCED_COLOR_4},
        std::pair{8, cv::IMREAD_REDUCED_COLOR_8}}) {
    int const w = 512 / factor;
    int const h = 384 / factor;
    // The crop is the whole image and the output its 1/factor size: the decode alone shrinks it.
    image_options o{.height = h, .width = w, .resize_to = h};
    gpufeed::image_folder reduced{dir.parent_path(), o};
    cv::Mat const want = cv::imdecode(jpeg, flag | cv::IMREAD_IGNORE_ORIENTATION);
    ASSERT_EQ(want.cols, w);
    EXPECT_EQ(read_one(reduced, 0).image, rgb_bytes(want)) << "1/" << factor;

    o.reduced_decoding = false;
    o.planar_decoding = false;  // RGB all the way (image_decode_test covers the planar path)
    gpufeed::image_folder full{dir.parent_path(), o};
    cv::Mat const whole = cv::imdecode(jpeg, cv::IMREAD_COLOR);
    auto const shrunk = gpufeed::test::reference_resize(whole, {0, 0, 512, 384}, w, h);
    EXPECT_LE(max_abs_diff(read_one(full, 0).image, rgb_bytes(shrunk)), 1)
        << "1/" << factor << " by resizing";
  }
}

// A complete JPEG whose entropy-coded data is damaged: cv::imdecode decodes it into a garbled
// picture with only a libjpeg warning on stderr; gpufeed's decode makes it an error naming the
// file, at full and at reduced size.
TEST_F(image_folder_test, DamagedScanDataIsAnError) {
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
    gpufeed::file_list d{csv,
                         image_options{.height = 16, .width = 16, .reduced_decoding = reduced}};
    EXPECT_EQ(read_one(d, 0).label, 0);
    for (std::size_t i = 1; i < names.size(); ++i) {
      try {
        (void)read_one(d, i);
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
TEST_F(image_folder_test, ADamagedPngAfterAGoodOneIsAnError) {
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
    (void)read_one(d, 0);  // this thread's last decode: a good picture
    try {
      (void)read_one(d, bad);
      ADD_FAILURE() << "damaged PNG " << bad << " was read without an error";
    } catch (gpufeed::file_error const& e) {
      EXPECT_NE(e.path().find(bad == 1 ? "1-bad-header.png" : "2-cut.png"), std::string::npos)
          << e.what();
    }
  }
}

// Each bad file gives a sample_error naming it through the loader, and under error_policy::skip
// the epoch completes with every bad sample counted and listed.
TEST_F(image_folder_test, BadInputsNameTheFile) {
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
  write_bytes(dir / "bitmap.jpg", encode(make_picture(64, 48, 3), ".bmp"));  // neither codec
  write_bytes(dir / "vanished.jpg", good_jpeg);
  fs::create_directories(dir / "directory.jpg");
  std::vector<std::string> const names{
      "good.jpg",      "empty.jpg",    "truncated.jpg", "short.jpg",   "garbage.jpg", "garbage.png",
      "truncated.png", "vanished.jpg", "directory.jpg", "missing.png", "bitmap.jpg"};
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
      (void)read_one(*d, i);
      ADD_FAILURE() << names[i] << " was read without an error";
    } catch (gpufeed::file_error const& e) {
      EXPECT_EQ(e.path(), (dir / names[i]).string()) << e.what();
    }
  }
  EXPECT_EQ(read_one(*d, 0).label, 0);

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

// The header is read once, by libjpeg: the frame's size, and whether an end-of-image marker
// follows the scan (a file cut short in its scan data is told apart before any row is decoded).
TEST_F(image_folder_test, ReadsJpegHeaders) {
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
