#pragma once
// Image fixtures for the image dataset suites, written with OpenCV into a fresh temporary folder.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "temp_dir.hpp"

namespace gpufeed::test {

// A smooth BGR picture (gradients, different for each `variant`): compresses well and survives
// JPEG's reduced-size decoding nearly unchanged.
inline cv::Mat make_picture(int width, int height, int variant) {
  cv::Mat image(height, width, CV_8UC3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      auto& p = image.at<cv::Vec3b>(y, x);
      p[0] = cv::saturate_cast<std::uint8_t>(x * 200 / width + variant * 7);
      p[1] = cv::saturate_cast<std::uint8_t>(y * 200 / height + variant * 3);
      p[2] = cv::saturate_cast<std::uint8_t>(((x + y) * 120) / (width + height) + variant * 11);
    }
  }
  return image;
}

// The bytes of `image` encoded as `ext` (".jpg" or ".png").
inline std::vector<unsigned char> encode(cv::Mat const& image, std::string const& ext) {
  std::vector<unsigned char> bytes;
  if (!cv::imencode(ext, image, bytes)) throw std::runtime_error("imencode failed for " + ext);
  return bytes;
}

inline void write_bytes(std::filesystem::path const& path,
                        std::vector<unsigned char> const& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out.write(reinterpret_cast<char const*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace gpufeed::test
