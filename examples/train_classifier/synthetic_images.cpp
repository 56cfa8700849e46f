#include "synthetic_images.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <mutex>
#include <numbers>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "support/synthetic_photo.hpp"

namespace train_classifier {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t data_seed = 20241124;
constexpr double two_pi = 2 * std::numbers::pi;

float smooth_step(float x) {  // a soft edge around 0, in [0, 1]
  return 1.0F / (1.0F + std::exp(-x));
}

// The class's pattern in [0, 1] at w x h (half the image's size), periods of `period` pixels.
cv::Mat texture(int label, int w, int h, float period, cv::RNG& rng) {
  cv::Mat p(h, w, CV_32F);
  auto const phase = static_cast<float>(rng.uniform(0.0, two_pi));
  auto const phase2 = static_cast<float>(rng.uniform(0.0, two_pi));
  auto const k = static_cast<float>(two_pi) / period;
  auto const at = [&](auto&& f) {
    for (int y = 0; y < h; ++y) {
      auto* row = p.ptr<float>(y);
      for (int x = 0; x < w; ++x) row[x] = f(static_cast<float>(x), static_cast<float>(y));
    }
  };
  switch (label) {
    case 0:  // stripes across, gently bent
      at([&](float x, float y) {
        return 0.5F + 0.5F * std::sin(k * y + phase + 0.6F * std::sin(k * x / 5 + phase2));
      });
      break;
    case 1:  // stripes down, gently bent
      at([&](float x, float y) {
        return 0.5F + 0.5F * std::sin(k * x + phase + 0.6F * std::sin(k * y / 5 + phase2));
      });
      break;
    case 2:  // both diagonals (a mirror image is still one)
      at([&](float x, float y) {
        float const a = std::sin(k * (x + y) / std::numbers::sqrt2_v<float> + phase);
        float const b = std::sin(k * (x - y) / std::numbers::sqrt2_v<float> + phase2);
        return 0.5F + 0.5F * std::max(a, b);
      });
      break;
    case 3:  // checkerboard
      at([&](float x, float y) {
        return smooth_step(6 * std::sin(k * x / 2 + phase) * std::sin(k * y / 2 + phase2));
      });
      break;
    case 4: {  // dots on a lattice
      float const spacing = 1.5F * period;
      float const radius = 0.3F * spacing;
      at([&](float x, float y) {
        float const dx = std::remainder(x + phase * spacing, spacing);
        float const dy = std::remainder(y + phase2 * spacing, spacing);
        return std::clamp((radius - std::hypot(dx, dy)) / 1.5F + 0.5F, 0.0F, 1.0F);
      });
      break;
    }
    case 5: {  // rings around a point, on the picture or off it
      auto const cx = static_cast<float>(rng.uniform(-0.5, 1.5) * w);
      auto const cy = static_cast<float>(rng.uniform(-0.5, 1.5) * h);
      at([&](float x, float y) {
        return 0.5F + 0.5F * std::sin(k * std::hypot(x - cx, y - cy) + phase);
      });
      break;
    }
    case 6: {  // clouds: soft blotches, no period
      cv::Mat const n = gpufeed::test::octave_noise(w, h, 1, {.finest = 16}, rng);
      at([&](float x, float y) {
        return smooth_step(2.5F * n.at<float>(static_cast<int>(y), static_cast<int>(x)));
      });
      break;
    }
    case 7: {  // mosaic: a regular grid of tiles, each its own shade
      int const cells_x = std::max(2, static_cast<int>(static_cast<float>(w) / (0.7F * period)));
      int const cells_y = std::max(2, static_cast<int>(static_cast<float>(h) / (0.7F * period)));
      cv::Mat tiles(cells_y, cells_x, CV_32F);
      rng.fill(tiles, cv::RNG::UNIFORM, 0, 1);
      cv::resize(tiles, p, cv::Size{w, h}, 0, 0, cv::INTER_NEAREST);
      break;
    }
    case 8: {  // blocks: overlapping rectangles of every size
      p.setTo(rng.uniform(0.0, 1.0));
      for (int i = 0; i < 40; ++i) {
        int const bw = rng.uniform(w / 20, w / 3);
        int const bh = rng.uniform(h / 20, h / 3);
        cv::Point const corner{rng.uniform(-bw / 2, w), rng.uniform(-bh / 2, h)};
        cv::rectangle(p, cv::Rect{corner, cv::Size{bw, bh}}, cv::Scalar{rng.uniform(0.0, 1.0)},
                      cv::FILLED);
      }
      break;
    }
    default:  // waves: stripes across, strongly bent
      at([&](float x, float y) {
        return 0.5F + 0.5F * std::sin(k * y + phase + 2.5F * std::sin(k * x / 3 + phase2));
      });
  }
  return p;
}

cv::Vec3f random_colour(cv::RNG& rng) {
  return {static_cast<float>(rng.uniform(0.0, 255.0)), static_cast<float>(rng.uniform(0.0, 255.0)),
          static_cast<float>(rng.uniform(0.0, 255.0))};
}

// One picture of class `label`: its texture in two random colours of some contrast, under a
// random slope of light, over coloured 1/f noise, with sensor grain; drawn at half size and
// scaled up (softly, as a lens does), grain at full size.
cv::Mat draw(int label, int width, int height, cv::Mat const& grain, cv::RNG& rng) {
  int const w = (width + 1) / 2;
  int const h = (height + 1) / 2;
  auto const period = static_cast<float>(rng.uniform(12.0, 24.0));
  cv::Mat const p = texture(label, w, h, period, rng);
  cv::Vec3f const dark = random_colour(rng);
  cv::Vec3f light = random_colour(rng);
  while (cv::norm(light - dark, cv::NORM_L1) < 150) light = random_colour(rng);
  // Coloured 1/f noise (tests/support/synthetic_photo.hpp), roughly unit spread.
  cv::Mat const noise = gpufeed::test::octave_noise(w, h, 3, {.finest = 64}, rng);
  auto const slope_x = static_cast<float>(rng.uniform(-0.4, 0.4));
  auto const slope_y = static_cast<float>(rng.uniform(-0.4, 0.4));
  cv::Mat half(h, w, CV_32FC3);
  for (int y = 0; y < h; ++y) {
    auto const* pr = p.ptr<float>(y);
    auto const* nr = noise.ptr<cv::Vec3f>(y);
    auto* out = half.ptr<cv::Vec3f>(y);
    for (int x = 0; x < w; ++x) {
      float const light_here = 1 +
                               slope_x * (static_cast<float>(x) / static_cast<float>(w) - 0.5F) +
                               slope_y * (static_cast<float>(y) / static_cast<float>(h) - 0.5F);
      out[x] = (dark * (1 - pr[x]) + light * pr[x]) * light_here + nr[x] * 18.0F;
    }
  }
  cv::Mat full;
  cv::resize(half, full, cv::Size{width, height}, 0, 0, cv::INTER_CUBIC);
  // Grain: a window of a shared noise tile (twice the largest picture), at a random place.
  cv::Rect const window{rng.uniform(0, grain.cols - width + 1),
                        rng.uniform(0, grain.rows - height + 1), width, height};
  cv::Mat grained;
  cv::add(full, grain(window), grained, cv::noArray(), CV_32FC3);
  cv::Mat image;
  grained.convertTo(image, CV_8UC3);
  return image;
}

// The size of image `index`: the long side in [min_side, max_side], landscape mostly, in the
// aspect ratios cameras use.
cv::Size size_of(cv::RNG& rng, int min_side, int max_side) {
  static constexpr std::array<double, 4> aspects{4.0 / 3.0, 3.0 / 2.0, 1.0, 3.0 / 4.0};
  int const long_side = rng.uniform(min_side, max_side + 1);
  double const aspect = aspects[static_cast<std::size_t>(rng.uniform(0, 4))];
  if (aspect >= 1) return {long_side, static_cast<int>(std::lround(long_side / aspect))};
  return {static_cast<int>(std::lround(long_side * aspect)), long_side};
}

// Writes images [first, first + count), spread evenly over the classes, into `folder/<class>/`.
void write_split(fs::path const& folder, std::size_t count, std::size_t first,
                 synthetic_images_options const& options, unsigned threads) {
  auto const& names = class_names();
  for (auto const& name : names) fs::create_directories(folder / name);
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto const worker = [&] {
    try {
      cv::RNG grain_rng{
          data_seed};  // the same tile in every thread: images depend on their index only
      cv::Mat grain(2 * options.max_side, 2 * options.max_side, CV_32FC3);
      grain_rng.fill(grain, cv::RNG::NORMAL, 0, 5);  // the same grain statistics everywhere
      std::vector<int> const params{cv::IMWRITE_JPEG_QUALITY, 90};
      for (std::size_t i = next++; i < count; i = next++) {
        std::size_t const index = first + i;
        auto const label = static_cast<int>(i % names.size());
        cv::RNG rng{data_seed + index * 0x9E3779B97F4A7C15ULL};
        cv::Size const size = size_of(rng, options.min_side, options.max_side);
        cv::Mat const image = draw(label, size.width, size.height, grain, rng);
        std::array<char, 32> file{};
        std::snprintf(file.data(), file.size(), "%06zu.jpg", index);
        auto const path = folder / names[static_cast<std::size_t>(label)] / file.data();
        if (!cv::imwrite(path.string(), image, params)) {
          throw std::runtime_error{"cannot write " + path.string()};
        }
      }
    } catch (...) {
      std::lock_guard lock{failure_mutex};
      if (!failure) failure = std::current_exception();
      next = count;  // the others stop too
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& thread : pool) thread.join();
  if (failure) std::rethrow_exception(failure);
}

std::uintmax_t bytes_under(fs::path const& root) {
  std::uintmax_t total = 0;
  for (auto const& entry : fs::recursive_directory_iterator{root}) {
    if (entry.is_regular_file()) total += entry.file_size();
  }
  return total;
}

}  // namespace

std::vector<std::string> const& class_names() {
  static std::vector<std::string> const names{
      "stripes-across", "stripes-down", "crosshatch", "checkerboard", "dots",
      "rings",          "clouds",       "mosaic",     "blocks",       "waves"};
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
  return base / "gpufeed" / "train_classifier-v2";
}

synthetic_images ensure_synthetic_images(synthetic_images_options const& options) {
  synthetic_images set;
  set.train_images = options.train_images;
  set.val_images = std::max<std::size_t>(options.train_images / 5, class_names().size());
  set.root = options.cache_dir /
             ("textures" + std::to_string(set.train_images) + "-side" +
              std::to_string(options.min_side) + "-" + std::to_string(options.max_side));
  set.train = set.root / "train";
  set.val = set.root / "val";
  if (fs::is_directory(set.train) && fs::is_directory(set.val)) {
    set.bytes = bytes_under(set.root);
    return set;
  }

  unsigned const threads =
      options.threads > 0 ? options.threads : std::max(1U, std::thread::hardware_concurrency());
  if (options.verbose) {
    std::cout << "writing " << set.train_images + set.val_images << " JPEGs (" << options.min_side
              << " to " << options.max_side << " pixels on the long side, " << class_names().size()
              << " classes, " << threads << " threads) to " << set.root.string() << " ...\n"
              << std::flush;
  }
  auto const start = std::chrono::steady_clock::now();
  fs::create_directories(options.cache_dir);
  auto const temporary =
      options.cache_dir / ("." + set.root.filename().string() + ".tmp-" + std::to_string(getpid()));
  fs::remove_all(temporary);
  write_split(temporary / "train", set.train_images, 0, options, threads);
  write_split(temporary / "val", set.val_images, set.train_images, options, threads);
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
  set.bytes = bytes_under(set.root);
  set.write_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.verbose) {
    std::array<char, 96> done{};
    std::snprintf(done.data(), done.size(), "  written in %.1f s (%.0f MB)\n", set.write_seconds,
                  static_cast<double>(set.bytes) / 1e6);
    std::cout << done.data() << std::flush;
  }
  return set;
}

}  // namespace train_classifier
