#pragma once
// Comparisons for the image dataset suites written with OpenCV (image_folder, image_formats,
// image_errors): OpenCV's pictures as the datasets' RGB bytes, and a picture whose JPEG has a long
// scan; read_sample (support/image_sample.hpp) reads one sample.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "image_sample.hpp"

namespace gpufeed::test {

// Our output of a BGR OpenCV image: RGB bytes, HWC.
inline pixels rgb_bytes(cv::Mat const& bgr) {
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  return {rgb.datastart, rgb.dataend};
}

// The largest difference of two images' bytes (256 when their sizes differ).
inline int max_abs_diff(pixels const& a, pixels const& b) {
  if (a.size() != b.size()) return 256;
  int most = 0;
  for (std::size_t i = 0; i < a.size(); ++i) most = std::max(most, std::abs(int{a[i]} - int{b[i]}));
  return most;
}

// The mean absolute difference of two images' bytes.
inline double mean_abs_diff(pixels const& a, pixels const& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += std::abs(int{a[i]} - int{b[i]});
  return a.empty() ? 0 : sum / static_cast<double>(a.size());
}

// A BGR picture of hashed noise: JPEG compresses it poorly, so its scan is long.
inline cv::Mat make_noise(int width, int height) {
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

}  // namespace gpufeed::test
