#include "decode_images.hpp"

#include <array>
#include <cstdio>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpufeed::bench {
namespace {

// One picture: noise at every scale with amplitude falling as the scale shrinks (the 1/f
// spectrum of natural images), a few solid shapes with hard edges, and sensor grain.
cv::Mat photo(int width, int height, cv::RNG& rng) {
  cv::Mat sum(height, width, CV_32FC3, cv::Scalar::all(0));
  float amplitude = 70;
  for (int cells = 2; cells < std::max(width, height); cells *= 2, amplitude *= 0.62F) {
    cv::Mat coarse(std::max(2, cells * height / width), cells, CV_32FC3);
    rng.fill(coarse, cv::RNG::NORMAL, 0, amplitude);
    cv::Mat fine;
    cv::resize(coarse, fine, cv::Size{width, height}, 0, 0, cv::INTER_CUBIC);
    sum += fine;
  }
  cv::Mat image;
  sum.convertTo(image, CV_8UC3, 1, 128);
  for (int shape = 0; shape < 6; ++shape) {
    cv::Scalar const colour{rng.uniform(0.0, 255.0), rng.uniform(0.0, 255.0),
                            rng.uniform(0.0, 255.0)};
    cv::Point const centre{rng.uniform(0, width), rng.uniform(0, height)};
    int const size = rng.uniform(width / 16, width / 4);
    if (shape % 2 == 0) {
      cv::circle(image, centre, size, colour, cv::FILLED, cv::LINE_AA);
    } else {
      cv::rectangle(image, centre, centre + cv::Point{size, size * 2 / 3}, colour, cv::FILLED,
                    cv::LINE_AA);
    }
  }
  cv::Mat grain(height, width, CV_16SC3);
  rng.fill(grain, cv::RNG::NORMAL, 0, 6);
  cv::Mat out;
  cv::add(image, grain, out, cv::noArray(), CV_8UC3);
  return out;
}

}  // namespace

void write_photo_set(std::filesystem::path const& folder, photo_set_options const& options) {
  auto const dir = folder / "photos";
  std::filesystem::create_directories(dir);
  std::vector<int> const params{cv::IMWRITE_JPEG_QUALITY, options.quality};
  for (std::size_t i = 0; i < options.images; ++i) {
    cv::RNG rng{options.seed * 0x9E3779B97F4A7C15ULL + i};
    std::array<char, 32> name{};
    std::snprintf(name.data(), name.size(), "%06zu.jpg", i);
    auto const path = dir / name.data();
    if (!cv::imwrite(path.string(), photo(options.width, options.height, rng), params)) {
      throw std::runtime_error{"cannot write " + path.string()};
    }
  }
}

}  // namespace gpufeed::bench
