#pragma once
// Samples and comparisons for the image dataset suites written with OpenCV (image_folder,
// image_formats, image_errors): one sample read as a worker reads it, OpenCV's pictures as the
// datasets' RGB bytes, and a picture whose JPEG has a long scan.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "gpufeed/dataset.hpp"
#include "gpufeed/detail/slot_layout.hpp"

namespace gpufeed::test {

using pixels = std::vector<std::uint8_t>;

// One sample of an image dataset: its image and its label.
struct sample {
  pixels image;
  std::int64_t label = -1;
};

// Sample `index` of `d`, read with `seed` as a worker reads it (into a slot of 0xAB bytes).
inline sample read_sample(gpufeed::dataset const& d, std::size_t index, std::uint64_t seed = 0) {
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
