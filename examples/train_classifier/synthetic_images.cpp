#include "synthetic_images.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <numbers>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>

namespace train_classifier {
namespace {

namespace fs = std::filesystem;

constexpr int orientations = 2;  // stripes across, stripes down
constexpr int frequencies = 5;   // cycles per image: 3 x 1.4^f, f = 0 .. 4
constexpr std::uint64_t data_seed = 20240511;

double uniform(std::mt19937_64& rng, double low, double high) {
  return std::uniform_real_distribution<double>{low, high}(rng);
}

cv::Vec3d random_colour(std::mt19937_64& rng) {
  return {uniform(rng, 0, 255), uniform(rng, 0, 255), uniform(rng, 0, 255)};
}

// One image of class `label`: sinusoidal stripes of the class's orientation (+-25 degrees, so a
// mirror image stays in its class) and frequency (+-10 %, so the classes do not overlap), in two
// random colours of some contrast, a random phase, a disc of a third colour over part of it, and
// pixel noise. A small CNN needs a few epochs to tell the ten classes apart.
cv::Mat draw(int label, int side, std::mt19937_64& rng) {
  int const orientation = label / frequencies;
  int const frequency = label % frequencies;
  double const cycles = 3 * std::pow(1.4, frequency) * uniform(rng, 0.9, 1.1);
  double const angle = (orientation == 0 ? 90.0 : 0.0) + uniform(rng, -25, 25);
  double const radians = angle * std::numbers::pi / 180;
  double const kx = std::cos(radians) * 2 * std::numbers::pi * cycles / side;
  double const ky = std::sin(radians) * 2 * std::numbers::pi * cycles / side;
  double const phase = uniform(rng, 0, 2 * std::numbers::pi);
  cv::Vec3d const background = random_colour(rng);
  cv::Vec3d foreground = random_colour(rng);
  while (cv::norm(foreground - background, cv::NORM_L1) < 150) foreground = random_colour(rng);

  cv::Mat image(side, side, CV_8UC3);
  std::normal_distribution<double> noise{0, 24};
  for (int y = 0; y < side; ++y) {
    auto* row = image.ptr<cv::Vec3b>(y);
    for (int x = 0; x < side; ++x) {
      double const v = 0.5 + 0.5 * std::sin(kx * x + ky * y + phase);
      cv::Vec3d const pixel = background * (1 - v) + foreground * v;
      for (int c = 0; c < 3; ++c)
        row[x][c] = cv::saturate_cast<std::uint8_t>(pixel[c] + noise(rng));
    }
  }
  cv::Vec3d const disc = random_colour(rng);
  cv::circle(image,
             {static_cast<int>(uniform(rng, 0, side)), static_cast<int>(uniform(rng, 0, side))},
             static_cast<int>(uniform(rng, 0.1, 0.3) * side), cv::Scalar{disc[0], disc[1], disc[2]},
             cv::FILLED, cv::LINE_AA);
  return image;
}

// Writes `count` images, spread evenly over the classes, into `folder/<class>/`.
void write_split(fs::path const& folder, std::size_t count, std::size_t first_index, int side) {
  auto const& names = class_names();
  for (auto const& name : names) fs::create_directories(folder / name);
  std::vector<int> const params{cv::IMWRITE_JPEG_QUALITY, 90};
  for (std::size_t i = 0; i < count; ++i) {
    auto const label = static_cast<int>(i % names.size());
    std::mt19937_64 rng{data_seed + (first_index + i) * 0x9E3779B97F4A7C15ULL};
    cv::Mat const image = draw(label, side, rng);
    std::array<char, 32> file{};
    std::snprintf(file.data(), file.size(), "%06zu.jpg", first_index + i);
    auto const path = folder / names[static_cast<std::size_t>(label)] / file.data();
    if (!cv::imwrite(path.string(), image, params)) {
      throw std::runtime_error{"cannot write " + path.string()};
    }
  }
}

}  // namespace

std::vector<std::string> const& class_names() {
  static std::vector<std::string> const names = [] {
    std::vector<std::string> out;
    for (int o = 0; o < orientations; ++o) {
      for (int f = 0; f < frequencies; ++f) {
        out.push_back((o == 0 ? "horizontal-" : "vertical-") + std::to_string(f + 1));
      }
    }
    return out;
  }();
  return names;
}

fs::path default_cache_dir() {
  fs::path base;
  if (char const* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    base = xdg;
  } else if (char const* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    base = fs::path{home} / ".cache";
  } else {
    base = fs::temp_directory_path();
  }
  return base / "gpufeed" / "train_classifier-v1";
}

synthetic_images ensure_synthetic_images(synthetic_images_options const& options) {
  synthetic_images set;
  set.train_images = options.train_images;
  set.val_images = std::max<std::size_t>(options.train_images / 5, class_names().size());
  set.root = options.cache_dir / ("images" + std::to_string(set.train_images) + "-size" +
                                  std::to_string(options.image_size));
  set.train = set.root / "train";
  set.val = set.root / "val";
  if (fs::is_directory(set.train) && fs::is_directory(set.val)) return set;

  int const side = options.image_size * 2;
  if (options.verbose) {
    std::cout << "writing " << set.train_images + set.val_images << " JPEGs (" << side << "x"
              << side << ", " << class_names().size() << " classes) to " << set.root.string()
              << " ...\n"
              << std::flush;
  }
  auto const start = std::chrono::steady_clock::now();
  fs::create_directories(options.cache_dir);
  auto const temporary =
      options.cache_dir / ("." + set.root.filename().string() + ".tmp-" + std::to_string(getpid()));
  fs::remove_all(temporary);
  write_split(temporary / "train", set.train_images, 0, side);
  write_split(temporary / "val", set.val_images, set.train_images, side);
  std::error_code error;
  fs::rename(temporary, set.root, error);
  if (error) {
    // Another run put the same set in place first: use that one.
    fs::remove_all(temporary);
    if (!fs::is_directory(set.train)) {
      throw std::runtime_error{"cannot move the images into " + set.root.string() + ": " +
                               error.message()};
    }
  }
  set.written_now = true;
  if (options.verbose) {
    std::array<char, 64> done{};
    std::snprintf(done.data(), done.size(), "  written in %.1f s\n",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    std::cout << done.data() << std::flush;
  }
  return set;
}

}  // namespace train_classifier
