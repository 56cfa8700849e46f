// Experiment (not part of the project): gpufeed's own jpeg_reader on the `center` crop of the
// generated set, alone (one thread, no loader), against the plain libjpeg calls of crop-costs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <opencv2/imgcodecs.hpp>
#include <vector>

#include "common.hpp"
#include "gpufeed/detail/jpeg_decode.hpp"

int main() {
  auto const files = generated_set();
  gpufeed::detail::rgbx_buffer pixels;
  std::vector<std::uint8_t> planes;
  std::vector<double> center, whole;
  for (int r = 0; r < 15; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (auto const& f : files) {
      gpufeed::detail::jpeg_reader reader{f, "x"};
      (void)reader.decode({48, 16, 224, 224}, pixels);
    }
    auto t1 = std::chrono::steady_clock::now();
    for (auto const& f : files) {
      gpufeed::detail::jpeg_reader reader{f, "x"};
      (void)reader.decode_planes(planes, 256);
    }
    auto t2 = std::chrono::steady_clock::now();
    center.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 200);
    whole.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count() / 200);
  }
  std::sort(center.begin(), center.end());
  std::sort(whole.begin(), whole.end());
  std::printf("jpeg_reader::decode center crop       median %6.1f us/image\n", center[7]);
  std::printf("jpeg_reader::decode_planes whole      median %6.1f us/image\n", whole[7]);
}
