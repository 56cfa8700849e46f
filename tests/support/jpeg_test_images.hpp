#pragma once
// JPEG fixtures and comparisons for the image decode suites (image_decode, image_planar,
// image_resize): photograph-like pictures encoded by libjpeg itself (every chroma sampling,
// grey, progressive, restart markers, which OpenCV cannot all write), a dataset's pixels read
// one sample at a time, and the ways the suites compare pixels and damage files.

#include <jpeglib.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <utility>
#include <vector>

#include "gpufeed/dataset.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "image/resample/image_resize.hpp"
#include "synthetic_photo.hpp"

namespace gpufeed::test {

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
inline cv::Mat make_photo(int width, int height, unsigned seed) {
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
inline std::vector<std::pair<std::string, jpeg_layout>> sampled_layouts() {
  return {{"420", {}},
          {"422", {.h_luma = 2, .v_luma = 1}},
          {"440", {.h_luma = 1, .v_luma = 2}},
          {"444", {.h_luma = 1, .v_luma = 1}},
          {"progressive", {.progressive = true}}};
}

// `rgb` encoded by libjpeg with the sampling and options of `layout` (OpenCV offers only 4:2:0).
inline std::vector<unsigned char> encode_jpeg(cv::Mat const& rgb, jpeg_layout const& layout) {
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

// The image of sample `index` of `d`, read with `seed` as a worker reads it.
inline pixels read_pixels(gpufeed::dataset const& d, std::size_t index, std::uint64_t seed) {
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
inline cv::Mat rgb_of(gpufeed::detail::rgbx_view const& view, gpufeed::detail::pixel_rect rect) {
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
inline gpufeed::detail::crop_area area_of(gpufeed::detail::pixel_rect const& rect) {
  return {static_cast<double>(rect.x), static_cast<double>(rect.y), static_cast<double>(rect.width),
          static_cast<double>(rect.height)};
}

// The largest difference of any byte of `a` and `b` (same size and type).
inline double largest_difference(cv::Mat const& a, cv::Mat const& b) {
  cv::Mat diff;
  cv::absdiff(a, b, diff);
  double most = 0;
  cv::minMaxLoc(diff.reshape(1), nullptr, &most);
  return most;
}

// How many bytes of `a` and `b` (same size and type) differ.
inline std::size_t differing_bytes(cv::Mat const& a, cv::Mat const& b) {
  cv::Mat diff;
  cv::absdiff(a, b, diff);
  return static_cast<std::size_t>(cv::countNonZero(diff.reshape(1)));
}

// Where the first scan's entropy-coded data starts in `jpeg` (after its SOS header).
inline std::size_t scan_start(std::vector<unsigned char> const& jpeg) {
  for (std::size_t i = 2; i + 3 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) {
      return i + 2 + ((std::size_t{jpeg[i + 2]} << 8U) | jpeg[i + 3]);
    }
  }
  return 0;
}

// `jpeg` with restart markers where none belongs, at `share` of its scan data: libjpeg reports
// "premature end of data segment" when it reaches them.
inline std::vector<unsigned char> with_bad_markers(std::vector<unsigned char> jpeg, double share) {
  std::size_t const scan = scan_start(jpeg);
  auto const at =
      scan + static_cast<std::size_t>(static_cast<double>(jpeg.size() - 2 - scan) * share);
  for (std::size_t i = 0; i < 16; i += 2) {
    jpeg[at + i] = 0xFF;
    jpeg[at + i + 1] = 0xD3;
  }
  return jpeg;
}

// How far two images of the same size are apart.
struct difference {
  double mean = 0;               // mean absolute difference, grey levels
  std::array<double, 3> bias{};  // mean signed difference per channel
  int most = 0;                  // largest absolute difference
};

inline difference compare(pixels const& a, pixels const& b) {
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

}  // namespace gpufeed::test
