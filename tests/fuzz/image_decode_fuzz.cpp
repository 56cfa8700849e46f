// libFuzzer target: image_pipeline::transform over arbitrary bytes. The only acceptable failure is
// a gpufeed::file_error; anything else (a crash, exit(), another exception, a sanitizer report)
// is a finding. The first bytes pick the options and the seed; the rest is the encoded image.
//
//   build: clang, tests/image_tests.cmake adds the target `image_decode_fuzz`
//   run:   mkdir -p DIR && image_decode_fuzz -max_total_time=20 -rss_limit_mb=2048 DIR
// An empty corpus directory (the first non-flag argument) is seeded with small JPEGs and PNGs
// encoded here (libjpeg, libpng), so no image files need to be checked in.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "gpufeed/datasets/image_options.hpp"
#include "gpufeed/detail/image_pipeline.hpp"
#include "gpufeed/error.hpp"
#include "image/pipeline/decode_strategy.hpp"
#include "support/image_writers.hpp"

namespace {

// Writes a few valid images (with the 9 option bytes in front) into an empty corpus directory.
void seed_corpus(std::filesystem::path const& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec) || !std::filesystem::is_empty(dir, ec)) return;
  int n = 0;
  std::uint32_t state = 12345;
  for (auto [w, h] : {std::pair{16, 12}, std::pair{40, 24}, std::pair{9, 33}}) {
    std::vector<std::uint8_t> rgb(static_cast<std::size_t>(w * h) * 3);
    for (auto& v : rgb)
      v = static_cast<std::uint8_t>((state = state * 1664525U + 1013904223U) >> 24U);
    gpufeed::test::png_picture png;
    png.width = w;
    png.height = h;
    png.interlaced = n % 4 == 2;
    png.samples.assign(rgb.begin(), rgb.end());
    std::vector<std::pair<char const*, std::vector<unsigned char>>> const files{
        {".jpg", gpufeed::test::encode_jpeg_rgb(rgb, w, h)},
        {".png", gpufeed::test::encode_png(png)}};
    for (auto const& [ext, bytes] : files) {
      std::vector<unsigned char> input(9, static_cast<unsigned char>(n * 37));
      input.insert(input.end(), bytes.begin(), bytes.end());
      std::ofstream out{dir / ("seed" + std::to_string(n++) + ext), std::ios::binary};
      out.write(reinterpret_cast<char const*>(input.data()),
                static_cast<std::streamsize>(input.size()));
    }
  }
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  // Keep a forged header from asking a decoder for gigabytes (the default cap is 2^30 pixels).
  ::setenv("OPENCV_IO_MAX_IMAGE_PIXELS", "16777216", 0);
  for (int i = 1; i < *argc; ++i) {
    if ((*argv)[i][0] != '-') {
      seed_corpus((*argv)[i]);
      break;
    }
  }
  return 0;
}

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  if (size < 10) return 0;
  std::uint8_t const mode = data[0];
  std::uint64_t seed = 0;
  std::memcpy(&seed, data + 1, sizeof(seed));
  std::span<unsigned char const> const encoded{data + 9, size - 9};

  gpufeed::image_options o;
  o.height = 1 + (mode & 0x0F);
  o.width = 1 + ((mode >> 4U) & 0x0F) * 3;
  o.resize = (mode & 0x10U) != 0 ? gpufeed::resize_mode::random_resized_crop
                                 : gpufeed::resize_mode::center_crop;
  o.horizontal_flip = (mode & 0x20U) != 0;
  if ((mode & 0x80U) != 0) o.jitter = {0.4F, 0.4F, 0.4F, 0.1F};
  o.check_whole_file = (seed >> 63U) == 0;  // the mode's bits are all taken
  gpufeed::detail::scoped_decode_strategy const strategy{{.reduced = (mode & 0x40U) == 0}};
  gpufeed::detail::image_pipeline const pipeline{o};
  std::vector<std::uint8_t> out(pipeline.bytes());
  try {
    pipeline.transform(encoded, "fuzz-input", out, seed);
  } catch (gpufeed::file_error const&) {
  }
  return 0;
}
