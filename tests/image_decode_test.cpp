// The image datasets' decode shortcuts and resize: a JPEG decoded only where the crop needs it
// gives the pixels of a whole decode; damage outside the crop is still an error; the resize is
// the reference resize (tests/support/reference_resize.hpp); the stage times count each image.

#include <gtest/gtest.h>
#include <jpeglib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpufeed/datasets/file_list.hpp"
#include "gpufeed/datasets/image_folder.hpp"
#include "gpufeed/detail/image_pipeline.hpp"
#include "image/resample/image_resize.hpp"
#include "image/decode/jpeg_decode.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/loader.hpp"
#include "support/gdal_tsan_suppression.hpp"
#include "support/image_fixtures.hpp"
#include "support/reference_resize.hpp"
#include "support/synthetic_photo.hpp"

namespace {

namespace fs = std::filesystem;
using gpufeed::image_options;
using gpufeed::resize_mode;
using gpufeed::test::temp_dir;
using gpufeed::test::write_bytes;
using pixels = std::vector<std::uint8_t>;

// Runs `f` with the plain C++ image kernels (portable) or the fastest this CPU has, then puts
// back those in use before, however `f` ends. @return whether the fastest were in use before.
template <class F>
bool with_kernels(bool portable, F&& f) {
  struct restore {
    bool fast_before;
    ~restore() { (void)gpufeed::detail::use_portable_resize(!fast_before); }
  } const guard{gpufeed::detail::use_portable_resize(portable)};
  std::forward<F>(f)();
  return guard.fast_before;
}

// A photograph-like RGB picture: smooth shapes at several scales plus grain, so that JPEG
// keeps detail everywhere (and every block boundary shows up in a comparison).
cv::Mat make_photo(int width, int height, unsigned seed) {
  cv::RNG rng{seed};
  cv::Mat sum = gpufeed::test::octave_noise(
      width, height, 3,
      {.amplitude = 60, .falloff = 0.6F, .finest = std::max(width, height) - 1, .square = true},
      rng);
  cv::Mat grain(height, width, CV_32FC3);
  rng.fill(grain, cv::RNG::NORMAL, 0, 8);
  sum += grain;
  cv::Mat out;
  sum.convertTo(out, CV_8UC3, 1, 128);
  return out;
}

struct jpeg_layout {
  int h_luma = 2;  // luma sampling factors: 2, 2 is 4:2:0, 2, 1 is 4:2:2, 1, 2 is 4:4:0
  int v_luma = 2;
  bool grey = false;
  bool progressive = false;
  int restart_rows = 0;  // a restart marker every so many MCU rows (0: none)
};

// The four chroma samplings and a progressive file, named for file names and messages.
std::vector<std::pair<std::string, jpeg_layout>> sampled_layouts() {
  return {{"420", {}},
          {"422", {.h_luma = 2, .v_luma = 1}},
          {"440", {.h_luma = 1, .v_luma = 2}},
          {"444", {.h_luma = 1, .v_luma = 1}},
          {"progressive", {.progressive = true}}};
}

// `rgb` encoded by libjpeg with the sampling and options of `layout` (OpenCV offers only 4:2:0).
std::vector<unsigned char> encode_jpeg(cv::Mat const& rgb, jpeg_layout const& layout) {
  jpeg_compress_struct info{};
  jpeg_error_mgr err{};
  info.err = jpeg_std_error(&err);
  jpeg_create_compress(&info);
  unsigned char* data = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&info, &data, &size);
  cv::Mat source = rgb;
  if (layout.grey) cv::cvtColor(rgb, source, cv::COLOR_RGB2GRAY);
  info.image_width = static_cast<JDIMENSION>(source.cols);
  info.image_height = static_cast<JDIMENSION>(source.rows);
  info.input_components = layout.grey ? 1 : 3;
  info.in_color_space = layout.grey ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, 90, TRUE);
  if (!layout.grey) {
    info.comp_info[0].h_samp_factor = layout.h_luma;
    info.comp_info[0].v_samp_factor = layout.v_luma;
  }
  info.restart_in_rows = layout.restart_rows;
  if (layout.progressive) jpeg_simple_progression(&info);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = source.ptr<unsigned char>(static_cast<int>(info.next_scanline));
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::vector<unsigned char> bytes(data, data + size);
  std::free(data);  // NOLINT(cppcoreguidelines-no-malloc): jpeg_mem_dest's buffer
  return bytes;
}

pixels read_one(gpufeed::dataset const& d, std::size_t index, std::uint64_t seed) {
  gpufeed::detail::slot_layout layout{d.spec(), 1};
  std::vector<std::byte> slot(layout.slot_bytes());
  gpufeed::read_context ctx;
  ctx.index = index;
  ctx.seed = seed;
  gpufeed::sample_view view{layout, slot.data(), 0};
  d.read(index, view, ctx);
  auto image = view.as<std::uint8_t>(0);
  return {image.begin(), image.end()};
}

// The RGB pixels of `view` (RGBX) inside `rect`, given in decoded-image coordinates.
cv::Mat rgb_of(gpufeed::detail::rgbx_view const& view, gpufeed::detail::pixel_rect rect) {
  cv::Mat out(rect.height, rect.width, CV_8UC3);
  for (int y = 0; y < rect.height; ++y) {
    for (int x = 0; x < rect.width; ++x) {
      std::uint8_t const* p = view.data +
                              static_cast<std::size_t>(rect.y - view.y + y) * view.stride +
                              4 * static_cast<std::size_t>(rect.x - view.x + x);
      out.at<cv::Vec3b>(y, x) = {p[0], p[1], p[2]};
    }
  }
  return out;
}

// `rect` as a crop.
gpufeed::detail::crop_area area_of(gpufeed::detail::pixel_rect const& rect) {
  return {static_cast<double>(rect.x), static_cast<double>(rect.y), static_cast<double>(rect.width),
          static_cast<double>(rect.height)};
}

// The largest difference of any byte of `a` and `b` (same size and type).
double largest_difference(cv::Mat const& a, cv::Mat const& b) {
  cv::Mat diff;
  cv::absdiff(a, b, diff);
  double most = 0;
  cv::minMaxLoc(diff.reshape(1), nullptr, &most);
  return most;
}

std::size_t differing_bytes(cv::Mat const& a, cv::Mat const& b) {
  cv::Mat diff;
  cv::absdiff(a, b, diff);
  return static_cast<std::size_t>(cv::countNonZero(diff.reshape(1)));
}

// Where the first scan's entropy-coded data starts in `jpeg` (after its SOS header).
std::size_t scan_start(std::vector<unsigned char> const& jpeg) {
  for (std::size_t i = 2; i + 3 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) {
      return i + 2 + ((std::size_t{jpeg[i + 2]} << 8U) | jpeg[i + 3]);
    }
  }
  return 0;
}

// `jpeg` with restart markers where none belongs, at `share` of its scan data: libjpeg reports
// "premature end of data segment" when it reaches them.
std::vector<unsigned char> with_bad_markers(std::vector<unsigned char> jpeg, double share) {
  std::size_t const scan = scan_start(jpeg);
  auto const at =
      scan + static_cast<std::size_t>(static_cast<double>(jpeg.size() - 2 - scan) * share);
  for (std::size_t i = 0; i < 16; i += 2) {
    jpeg[at + i] = 0xFF;
    jpeg[at + i + 1] = 0xD3;
  }
  return jpeg;
}

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

// Through the dataset: cropped_decoding changes no pixel of random-resized crops.
TEST(image_decode_test, CroppedDecodingKeepsTheDatasetsPixels) {
  temp_dir dir;
  auto const root = dir.path() / "folder";
  for (unsigned i = 0; i < 3; ++i) {
    write_bytes(root / "c" / ("p" + std::to_string(i) + ".jpg"),
                encode_jpeg(make_photo(320 + 37 * static_cast<int>(i), 256, i), {}));
  }
  for (int size : {224, 64}) {  // 64: also DCT scaling for the larger crops
    image_options o{.height = size,
                    .width = size,
                    .resize = resize_mode::random_resized_crop,
                    .horizontal_flip = true,
                    .planar_decoding = false};  // RGB decodes only: the planar path decodes all
    gpufeed::image_folder cropped{root, o};
    o.cropped_decoding = false;
    gpufeed::image_folder whole{root, o};
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      for (std::size_t i = 0; i < cropped.size(); ++i) {
        ASSERT_EQ(read_one(cropped, i, seed), read_one(whole, i, seed))
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
      gpufeed::file_list d{
          csv,
          image_options{.resize_to = 224, .cropped_decoding = cropped, .planar_decoding = planar}};
      EXPECT_NO_THROW((void)read_one(d, 0, 0));
      for (std::size_t i : {1U, 2U}) {
        try {
          (void)read_one(d, i, 0);
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

// The resize against the reference model, on resize_cases' geometries; the SIMD kernels (four
// turned rows at a time, and the rows left over one by one) give exactly the plain kernels'
// pixels.
TEST(image_decode_test, ResizeMatchesTheReference) {
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

// The planes' resize (resize_ycc_to_rgb) on resize_cases' geometries: with chroma at full
// resolution, the reference model of the YCbCr image converted to RGB, within a grey level; with
// chroma subsampled too, the SIMD kernels (eight turned rows at a time) give exactly the plain
// kernels' pixels.
TEST(image_decode_test, PlaneResizeMatchesTheReference) {
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

// copy_ycc_to_rgb turns the planes into exactly libjpeg's RGB decode of the same pixels: for
// 4:2:0, 4:2:2 and 4:4:4, odd image sizes, full and reduced sizes, areas on every edge, at odd
// and even offsets and ends, mirrored or not, with the SIMD and the plain kernels. Planes decoded
// only down to the area's rows and the chroma row below (check_whole_file = false) give the same.
TEST(image_decode_test, CopyOfThePlanesIsLibjpegsDecode) {
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
TEST(image_decode_test, PlanesReadAreTheCropAndACopysChromaContext) {
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
TEST(image_decode_test, CopyOfThePlanesRefusesWhatItCannotReproduce) {
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
TEST(image_decode_test, PlanesOfARectangleAreTheWholeDecodes) {
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
TEST(image_decode_test, CopyConvertsEveryChromaPairAsLibjpegsTables) {
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
TEST(image_decode_test, CentreCropCopiesTakeThePlanarPathWithTheSamePixels) {
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
    image_options o{.height = 224, .width = 224, .resize_to = 256, .check_whole_file = check};
    gpufeed::image_folder planar{dir.path(), o};
    o.planar_decoding = false;
    gpufeed::image_folder rgb{dir.path(), o};
    for (std::size_t i = 0; i < planar.size(); ++i) {
      ASSERT_EQ(read_one(planar, i, 0), read_one(rgb, i, 0))
          << planar.entries()[i].path << (check ? "" : ", stopping after the crop");
    }
    // Every image but the 4:4:0 ones went the planar way.
    EXPECT_EQ(planar.stage_times().planar_images, planar.size() - sizes.size())
        << (check ? "checked" : "stopping");
    EXPECT_EQ(rgb.stage_times().planar_images, 0U);
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
  for (std::size_t i = 0; i < d.size(); ++i) (void)read_one(d, i, i);
  auto const t = d.stage_times();
  EXPECT_EQ(t.images, 4U);
  EXPECT_EQ(t.source_pixels, 4U * 96U * 64U);
  EXPECT_GT(t.decoded_pixels, 0U);
  EXPECT_GT(t.read_s, 0.0);
  EXPECT_GT(t.decode_s, 0.0);
  EXPECT_GT(t.resize_s, 0.0);  // (no jitter was asked: its time says nothing here)
}

namespace {

struct difference {
  double mean = 0;               // mean absolute difference, grey levels
  std::array<double, 3> bias{};  // mean signed difference per channel
  int most = 0;                  // largest absolute difference
};

difference compare(pixels const& a, pixels const& b) {
  difference d;
  for (std::size_t i = 0; i < a.size(); ++i) {
    int const delta = int{a[i]} - int{b[i]};
    d.mean += std::abs(delta);
    d.bias[i % 3] += delta;
    d.most = std::max(d.most, std::abs(delta));
  }
  d.mean /= static_cast<double>(a.size());
  for (double& b_ : d.bias) b_ /= static_cast<double>(a.size() / 3);
  return d;
}

}  // namespace

// The planar path (planes resampled, colour converted at the output size) against RGB decodes
// resampled the same way: close on average, unbiased, bounded at sharp colour edges; for every
// chroma sampling, at full and reduced size. And it is taken: it decodes whole images.
TEST(image_decode_test, PlanarDecodingIsCloseToRgbDecoding) {
  temp_dir dir;
  auto const layouts = sampled_layouts();
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    write_bytes(
        dir.path() / "c" / (layouts[i].first + ".jpg"),
        encode_jpeg(make_photo(333, 250, static_cast<unsigned>(20 + i)), layouts[i].second));
  }
  for (int size : {224, 96}) {  // 96: DCT scaling for the larger crops
    image_options o{.height = size,
                    .width = size,
                    .resize = resize_mode::random_resized_crop,
                    .scale_min = 0.7F,  // crops over 60 % of the image: the planar path
                    .horizontal_flip = true};
    gpufeed::image_folder planar{dir.path(), o};
    o.planar_decoding = false;
    gpufeed::image_folder rgb{dir.path(), o};
    for (std::size_t i = 0; i < planar.size(); ++i) {
      for (std::uint64_t seed = 0; seed < 6; ++seed) {
        auto const d = compare(read_one(planar, i, seed), read_one(rgb, i, seed));
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

// The decode plan is the cheaper one measured (gpufeed-bench decode): DCT scaling
// only by 2, 4 or 8, never by 3/8 .. 7/8 (no SIMD inverse DCTs: slower than a full decode); and
// Resize(256) + CenterCrop(224) of a 480x400 photograph, whose crop covers 64 % of it, through
// the planar path (the 16 x 16 iMCUs under the crop decoded; without partial_planes_built(),
// all), its pixels close to the cropped RGB decode's.
TEST(image_decode_test, DecodePlanIsTheCheapOne) {
  using gpufeed::detail::jpeg_reduction;
  image_options const o{.height = 224, .width = 224};
  EXPECT_EQ(jpeg_reduction(o, 350, 350), 1) << "not 6/8 (5/8 covers 224 too)";
  EXPECT_EQ(jpeg_reduction(o, 447, 600), 1);
  EXPECT_EQ(jpeg_reduction(o, 448, 448), 2);
  EXPECT_EQ(jpeg_reduction(o, 1000, 900), 4);
  EXPECT_EQ(jpeg_reduction(o, 1792, 1800), 8);
  EXPECT_EQ(jpeg_reduction(image_options{.height = 224, .width = 224, .reduced_decoding = false},
                           1792, 1800),
            1);

  temp_dir dir;
  write_bytes(dir.path() / "c" / "photo.jpg", encode_jpeg(make_photo(480, 400, 31), {}));
  image_options eval{.height = 224, .width = 224, .resize_to = 256};
  gpufeed::image_folder planar{dir.path(), eval};
  eval.planar_decoding = false;
  gpufeed::image_folder rgb{dir.path(), eval};
  auto const d = compare(read_one(planar, 0, 0), read_one(rgb, 0, 0));
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
    (void)read_one(crops, 0, seed);  // baseline.jpg
    (void)read_one(crops, 1, seed);  // progressive.jpg
  }
  EXPECT_EQ(crops.stage_times().planar_images, gpufeed::detail::partial_planes_built() ? 10U : 0U);
}

// Grey JPEGs (one component) and PNGs take the RGB path: the option changes none of their pixels.
TEST(image_decode_test, PlanarDecodingLeavesOtherImagesAlone) {
  temp_dir dir;
  write_bytes(dir.path() / "c" / "grey.jpg", encode_jpeg(make_photo(120, 90, 4), {.grey = true}));
  write_bytes(dir.path() / "c" / "photo.png",
              gpufeed::test::encode(make_photo(120, 90, 5), ".png"));
  image_options o{.height = 64, .width = 64, .resize = resize_mode::random_resized_crop};
  gpufeed::image_folder planar{dir.path(), o};
  o.planar_decoding = false;
  gpufeed::image_folder rgb{dir.path(), o};
  for (std::size_t i = 0; i < planar.size(); ++i) {
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      EXPECT_EQ(read_one(planar, i, seed), read_one(rgb, i, seed)) << i << ", seed " << seed;
    }
  }
}

// The SIMD kernels and the plain C++ ones give the same pixels, on both paths.
TEST(image_decode_test, PortableKernelsGiveTheSamePixels) {
  temp_dir dir;
  write_bytes(dir.path() / "c" / "a.jpg", encode_jpeg(make_photo(333, 250, 9), {}));
  write_bytes(dir.path() / "c" / "b.jpg",
              encode_jpeg(make_photo(200, 301, 10), {.h_luma = 1, .v_luma = 1}));
  for (bool planar_path : {true, false}) {
    for (int size : {224, 61}) {
      gpufeed::image_folder d{dir.path(), image_options{.height = size,
                                                        .width = size + 3,
                                                        .resize = resize_mode::random_resized_crop,
                                                        .horizontal_flip = true,
                                                        .planar_decoding = planar_path}};
      for (std::size_t i = 0; i < d.size(); ++i) {
        for (std::uint64_t seed = 0; seed < 5; ++seed) {
          pixels plain;
          bool const was_fast = with_kernels(true, [&] { plain = read_one(d, i, seed); });
          EXPECT_TRUE(was_fast);
          EXPECT_EQ(plain, read_one(d, i, seed)) << "planar " << planar_path << ", size " << size
                                                 << ", image " << i << ", seed " << seed;
        }
      }
    }
  }
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
                        .planar_decoding = planar,
                        .check_whole_file = false};
        gpufeed::image_folder stopping{dir.path(), o};
        o.check_whole_file = true;
        gpufeed::image_folder checking{dir.path(), o};
        for (std::uint64_t seed = 0; seed < 8; ++seed) {
          for (std::size_t i = 0; i < stopping.size(); ++i) {
            auto const stopped = read_one(stopping, i, seed);  // after the previous image
            ASSERT_EQ(stopped, read_one(checking, i, seed))
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
      (void)read_one(d, i, 0);
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
      image_options o{.resize_to = 224,
                      .cropped_decoding = cropped,
                      .planar_decoding = planar,
                      .check_whole_file = false};
      gpufeed::file_list stopping{csv, o};
      auto const want = read_one(stopping, 0, 0);
      if (planar || cropped) {
        EXPECT_EQ(read_one(stopping, 1, 0), want) << what;
        EXPECT_EQ(read_one(stopping, 2, 0), want) << what;
      } else {  // the RGB path without cropped_decoding decodes every row
        expect_corrupt(stopping, 1, what + ", stopping");
        expect_corrupt(stopping, 2, what + ", stopping");
      }
      expect_corrupt(stopping, 3, what + ", stopping");
      o.check_whole_file = true;
      gpufeed::file_list checking{csv, o};
      EXPECT_EQ(read_one(checking, 0, 0), want) << what;
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
