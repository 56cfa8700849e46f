#include "decode_images.hpp"

#include <array>
#include <cstdio>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/synthetic_photo.hpp"

namespace gpufeed::bench {

void write_photo_set(std::filesystem::path const& folder, photo_set_options const& options) {
  auto const dir = folder / "photos";
  std::filesystem::create_directories(dir);
  std::vector<int> const params{cv::IMWRITE_JPEG_QUALITY, options.quality};
  for (std::size_t i = 0; i < options.images; ++i) {
    cv::RNG rng{options.seed * 0x9E3779B97F4A7C15ULL + i};
    std::array<char, 32> name{};
    std::snprintf(name.data(), name.size(), "%06zu.jpg", i);
    auto const path = dir / name.data();
    if (!cv::imwrite(path.string(), gpufeed::test::photo(options.width, options.height, rng),
                     params)) {
      throw std::runtime_error{"cannot write " + path.string()};
    }
  }
}

}  // namespace gpufeed::bench
