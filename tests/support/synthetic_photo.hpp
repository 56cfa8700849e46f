#pragma once
// Photograph-like synthetic pictures, drawn with OpenCV: the one generator behind the image
// suites' fixtures (tests/support/jpeg_test_images.hpp), `gpufeed-bench decode`'s generated set
// (benchmarks/gpufeed_bench/decode_images.cpp) and the train_classifier example's textures
// (examples/train_classifier/synthetic_images.cpp). Header-only, so that each compiles it in
// without a library of its own (the example also builds on its own, from this tree, against an
// installed gpufeed). Deterministic: the same generator state gives the same picture.

#include <algorithm>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace gpufeed::test {

/// @brief The octaves of octave_noise: random grids of 2, 4, 8, ... cells across, up to
/// `finest` cells, each `falloff` times as strong as the one before.
struct octaves {
  float amplitude = 1;   ///< the standard deviation of the coarsest grid
  float falloff = 0.6F;  ///< each grid's amplitude over the previous one's
  int finest = 64;       ///< cells across the finest grid (inclusive)
  bool square = false;   ///< grids of n x n cells (else as many rows as keep the cells square)
};

/// @brief Noise with structure at every scale, amplitude falling with the scale (the 1/f
/// spectrum of natural images): the sum of the octaves' random grids, each scaled up to
/// `width` x `height` by bicubic interpolation. Float, `channels` channels, zero mean. The grids
/// are drawn from `rng` in order, coarsest first.
inline cv::Mat octave_noise(int width, int height, int channels, octaves const& o, cv::RNG& rng) {
  cv::Mat sum(height, width, CV_32FC(channels), cv::Scalar::all(0));
  float amplitude = o.amplitude;
  for (int cells = 2; cells <= o.finest; cells *= 2, amplitude *= o.falloff) {
    int const rows = o.square ? cells : std::max(2, cells * height / width);
    cv::Mat coarse(rows, cells, CV_32FC(channels));
    rng.fill(coarse, cv::RNG::NORMAL, 0, amplitude);
    cv::Mat fine;
    cv::resize(coarse, fine, cv::Size{width, height}, 0, 0, cv::INTER_CUBIC);
    sum += fine;
  }
  return sum;
}

/// @brief A photograph-like 8-bit picture with three channels: octave noise down to single
/// pixels around mid-grey, six solid shapes with soft-edged hard boundaries (circles and
/// rectangles in random colours), and sensor grain. It compresses about as a photograph of its
/// size does. The channel order is whatever the caller takes it for.
inline cv::Mat photo(int width, int height, cv::RNG& rng) {
  cv::Mat const sum =
      octave_noise(width, height, 3,
                   {.amplitude = 70, .falloff = 0.62F, .finest = std::max(width, height) - 1}, rng);
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

}  // namespace gpufeed::test
