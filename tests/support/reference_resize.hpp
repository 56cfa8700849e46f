#pragma once
// A plain, double-precision model of the image datasets' resize, written from its definition
// (torchvision's resized_crop with antialias=True, PIL's BILINEAR) for the tests to compare
// with: crop the whole-pixel box, then for each axis, output i samples the crop at
// (i + 0.5) * scale with a triangle of half-width max(scale, 1), normalised; horizontal, then
// vertical, rounded once at the end.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <opencv2/core.hpp>
#include <vector>

namespace gpufeed::test {

// The weights of one output sample over the inputs [first, first + weights.size()).
struct reference_taps {
  int first = 0;
  std::vector<double> weights;
};

inline std::vector<reference_taps> reference_axis(int inputs, int outputs) {
  double const scale = static_cast<double>(inputs) / outputs;
  double const support = std::max(scale, 1.0);
  std::vector<reference_taps> axis(static_cast<std::size_t>(outputs));
  for (int i = 0; i < outputs; ++i) {
    double const center = (i + 0.5) * scale;
    int const lo = std::max(0, static_cast<int>(std::floor(center - support + 0.5)));
    int const hi = std::min(inputs, static_cast<int>(std::floor(center + support + 0.5)));
    auto& taps = axis[static_cast<std::size_t>(i)];
    taps.first = lo;
    double sum = 0;
    for (int x = lo; x < hi; ++x) {
      double const w = std::max(0.0, 1.0 - std::abs((x + 0.5 - center) / support));
      taps.weights.push_back(w);
      sum += w;
    }
    for (double& w : taps.weights) w /= sum;
  }
  return axis;
}

// `crop` of the 8-bit 3-channel `image`, resized to width x height, unrounded (CV_64FC3);
// channel order kept.
inline cv::Mat reference_resize_exact(cv::Mat const& image, cv::Rect crop, int width, int height) {
  cv::Mat const src = image(crop);
  auto const horizontal = reference_axis(src.cols, width);
  auto const vertical = reference_axis(src.rows, height);
  cv::Mat mid(src.rows, width, CV_64FC3);
  for (int y = 0; y < src.rows; ++y) {
    for (int i = 0; i < width; ++i) {
      auto const& taps = horizontal[static_cast<std::size_t>(i)];
      cv::Vec3d sum{0, 0, 0};
      for (std::size_t k = 0; k < taps.weights.size(); ++k) {
        cv::Vec3b const p = src.at<cv::Vec3b>(y, taps.first + static_cast<int>(k));
        for (int c = 0; c < 3; ++c) sum[c] += taps.weights[k] * p[c];
      }
      mid.at<cv::Vec3d>(y, i) = sum;
    }
  }
  cv::Mat out(height, width, CV_64FC3);
  for (int j = 0; j < height; ++j) {
    auto const& taps = vertical[static_cast<std::size_t>(j)];
    for (int i = 0; i < width; ++i) {
      cv::Vec3d sum{0, 0, 0};
      for (std::size_t k = 0; k < taps.weights.size(); ++k) {
        sum += taps.weights[k] * mid.at<cv::Vec3d>(taps.first + static_cast<int>(k), i);
      }
      out.at<cv::Vec3d>(j, i) = sum;
    }
  }
  return out;
}

// The same, rounded once to 8 bits.
inline cv::Mat reference_resize(cv::Mat const& image, cv::Rect crop, int width, int height) {
  cv::Mat const exact = reference_resize_exact(image, crop, width, height);
  cv::Mat out(height, width, CV_8UC3);
  for (int j = 0; j < height; ++j) {
    for (int i = 0; i < width; ++i) {
      for (int c = 0; c < 3; ++c) {
        out.at<cv::Vec3b>(j, i)[c] =
            cv::saturate_cast<std::uint8_t>(std::lround(exact.at<cv::Vec3d>(j, i)[c]));
      }
    }
  }
  return out;
}

}  // namespace gpufeed::test
