// Experiment (not part of the project): the `center` crop's decode (plain libjpeg calls, as
// jpeg_reader makes them) into rows at different addresses: row stride, and where the first row
// starts within a 64-byte cache line. Generated set as crop-costs.cpp; median of 7 rounds.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>  // jpeglib.h needs size_t and FILE first

#include <jpeglib.h>

#include <cstdint>
#include <opencv2/imgcodecs.hpp>
#include <vector>
#include "common.hpp"
std::vector<unsigned char> image(2 * 1024 * 1024);
void decode(std::vector<unsigned char> const& b, unsigned char* base, std::size_t stride) {
  jpeg_decompress_struct info{};
  jpeg_error_mgr err{};
  open_jpeg(info, err, b);
  info.out_color_space = JCS_EXT_RGBX;
  jpeg_start_decompress(&info);
  JDIMENSION x = 47, w = 226;
  jpeg_crop_scanline(&info, &x, &w);
  jpeg_skip_scanlines(&info, 16);
  while (info.output_scanline < 240) {
    JSAMPROW r = base + (info.output_scanline - 16) * stride;
    jpeg_read_scanlines(&info, &r, 1);
  }
  jpeg_skip_scanlines(&info, info.output_height - 1 - info.output_scanline);
  JSAMPROW r = base + 224 * stride;
  jpeg_read_scanlines(&info, &r, 1);
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
}
int main() {
  auto const files = generated_set();
  auto* a = image.data() + (64 - reinterpret_cast<std::uintptr_t>(image.data()) % 64) % 64;
  std::size_t offs[] = {0, 8, 16, 24, 32, 48};
  std::size_t strides[] = {980, 1024, 1088};
  for (auto st : strides)
    for (auto o : offs) {
      std::vector<double> t;
      for (int r = 0; r < 7; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        for (auto const& f : files) decode(f, a + o, st);
        t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                        .count() /
                    200);
      }
      std::sort(t.begin(), t.end());
      std::printf("stride %4zu start%%64=%2zu  %6.1f us\n", st, o, t[3]);
    }
}
