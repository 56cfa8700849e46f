// Experiment (not part of the project): where does the time of the `center` case's decode go on
// the generated 320x256 set (quality 90, OpenCV's 4:2:0)? Each variant decodes every image once
// per round with plain libjpeg calls (one thread), rounds interleaved, median of rounds reported.
// Build: see README.md next to this file.
#include <cstddef>
#include <cstdio>  // jpeglib.h needs size_t and FILE first

#include <jpeglib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "common.hpp"

namespace {
using bytes = std::vector<unsigned char>;
struct variant {
  std::string name;
  J_DCT_METHOD dct;
  bool fancy;
  J_COLOR_SPACE space;
  bool crop;    // jpeg_crop_scanline to 226 columns from x=47 (what jpeg_reader asks: crop +-1)
  bool skip;    // jpeg_skip_scanlines to row 16, rows [16, 240)
  bool to_end;  // read on to the end (skip + last row), as check_whole_file does
  bool raw;     // raw planes (no upsampling, no colour conversion), all rows
  std::size_t stride = 0;  // > 0: rows into an image-sized buffer (as gpufeed) with this stride,
                           // not one reused row
};

std::vector<unsigned char> row(4096 * 4);
std::vector<unsigned char> image(4 * 352 * 260);

void decode(bytes const& b, variant const& v) {
  jpeg_decompress_struct info{};
  jpeg_error_mgr err{};
  open_jpeg(info, err, b);
  info.dct_method = v.dct;
  info.do_fancy_upsampling = v.fancy ? TRUE : FALSE;
  if (v.raw) {
    info.raw_data_out = TRUE;
    jpeg_start_decompress(&info);
    static std::vector<unsigned char> planes(3 * 16 * 512);
    JSAMPROW rows[3][16];
    JSAMPARRAY p[3] = {rows[0], rows[1], rows[2]};
    for (int c = 0; c < 3; ++c)
      for (int r = 0; r < 16; ++r) rows[c][r] = planes.data() + (c * 16 + r) * 512;
    while (info.output_scanline < info.output_height) jpeg_read_raw_data(&info, p, 16);
    jpeg_finish_decompress(&info);
    jpeg_destroy_decompress(&info);
    return;
  }
  info.out_color_space = v.space;
  jpeg_start_decompress(&info);
  JDIMENSION y0 = 0, y1 = info.output_height;
  if (v.crop) {
    JDIMENSION x = 47, w = 226;
    jpeg_crop_scanline(&info, &x, &w);
  }
  if (v.skip) {
    y0 = 16;
    y1 = 240;
    jpeg_skip_scanlines(&info, y0);
  }
  while (info.output_scanline < y1) {
    JSAMPROW r = v.stride > 0 ? image.data() + (info.output_scanline - y0) * v.stride : row.data();
    jpeg_read_scanlines(&info, &r, 1);
  }
  if (v.to_end) {
    if (info.output_scanline + 1 < info.output_height)
      jpeg_skip_scanlines(&info, info.output_height - 1 - info.output_scanline);
    while (info.output_scanline < info.output_height) {
      JSAMPROW r = row.data();
      jpeg_read_scanlines(&info, &r, 1);
    }
    jpeg_finish_decompress(&info);
  } else {
    jpeg_abort_decompress(&info);
  }
  jpeg_destroy_decompress(&info);
}
}  // namespace

int main() {
  auto const files = generated_set();
  auto const S = JDCT_ISLOW, F = JDCT_IFAST;
  std::vector<variant> const vs = {
      {"limit: whole, IFAST, fancy, RGB", F, true, JCS_RGB, false, false, true, false},
      {"whole, ISLOW, fancy, RGB", S, true, JCS_RGB, false, false, true, false},
      {"whole, ISLOW, fancy, RGBX", S, true, JCS_EXT_RGBX, false, false, true, false},
      {"raw planes, ISLOW (planar path's decode)", S, true, JCS_RGB, false, false, true, true},
      {"raw planes, IFAST", F, true, JCS_RGB, false, false, true, true},
      {"center: crop+skip+to_end, ISLOW, fancy, RGBX (gpufeed)", S, true, JCS_EXT_RGBX, true, true,
       true, false},
      {"center: same, IFAST", F, true, JCS_EXT_RGBX, true, true, true, false},
      {"center: same, ISLOW, no fancy", S, false, JCS_EXT_RGBX, true, true, true, false},
      {"center: same, RGB not RGBX", S, true, JCS_RGB, true, true, true, false},
      {"center: crop only (no skip, rows 0..240 + to_end)", S, true, JCS_EXT_RGBX, true, false,
       true, false},
      {"center: skip only (all columns)", S, true, JCS_EXT_RGBX, false, true, true, false},
      {"center: crop+skip, stop after row 240", S, true, JCS_EXT_RGBX, true, true, false, false},
      {"center into a buffer, stride 1408 (64-byte rows)", S, true, JCS_EXT_RGBX, true, true, true,
       false, 1408},
      {"center into a buffer, stride 980 (as gpufeed: 4 x 241 + 16)", S, true, JCS_EXT_RGBX, true,
       true, true, false, 980},
      {"center into a buffer, stride 1024 (4 x 241 + 16, up to 64)", S, true, JCS_EXT_RGBX, true,
       true, true, false, 1024},
      {"whole, RGBX, into a buffer, stride 1296 (as gpufeed: 4 x 320 + 16)", S, true, JCS_EXT_RGBX,
       false, false, true, false, 1296},
      {"whole, RGBX, into a buffer, stride 1344 (up to 64)", S, true, JCS_EXT_RGBX, false, false,
       true, false, 1344},
  };
  std::printf("# the image-sized buffer starts %zu bytes past a 64-byte boundary\n",
              static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(image.data()) % 64));
  int const rounds = 15;
  std::vector<std::vector<double>> us(vs.size());
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < vs.size(); ++k) {
      auto const t0 = std::chrono::steady_clock::now();
      for (auto const& f : files) decode(f, vs[k]);
      auto const t1 = std::chrono::steady_clock::now();
      us[k].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / files.size());
    }
  }
  for (std::size_t k = 0; k < vs.size(); ++k) {
    auto v = us[k];
    std::sort(v.begin(), v.end());
    std::printf("%-58s median %6.1f us/image  (min %6.1f, max %6.1f)\n", vs[k].name.c_str(),
                v[v.size() / 2], v.front(), v.back());
  }
}
