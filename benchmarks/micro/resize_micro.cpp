// Micro-benchmark of the image datasets' resize (gpufeed::detail::resize_rgbx_to_rgb,
// resize_ycc_to_rgb and copy_ycc_to_rgb): one thread, crops of a 500 x 400 image (the size of the
// Python image benchmark's photographs) to 224 x 224, mirrored, as RandomResizedCrop and the centre
// crop make them. The source pixels are noise: the resize does the same work whatever they are.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "gpufeed/detail/image_resize.hpp"

namespace {

using gpufeed::detail::crop_area;

constexpr int source_width = 500;
constexpr int source_height = 400;
constexpr int output = 224;

// The crop: x, y, width, height in source pixels, off the pixel grid as scaled crops are.
crop_area crop_of(benchmark::State const& state) {
  double const width = static_cast<double>(state.range(0)) + 0.2;
  double const height = static_cast<double>(state.range(1)) + 0.5;
  return {10.3, 10.7, width, height};
}

void fill_noise(std::uint8_t* bytes, std::size_t count) {
  std::mt19937 rng{1};
  for (std::size_t i = 0; i < count; ++i) bytes[i] = static_cast<std::uint8_t>(rng());
}

void resize_rgbx(benchmark::State& state) {
  gpufeed::detail::rgbx_buffer source;
  std::uint8_t* const pixels = source.reset(source_width, source_height);
  fill_noise(pixels, source.stride() * source_height);
  std::vector<std::uint8_t> out(3 * output * output);
  crop_area const area = crop_of(state);
  for (auto _ : state) {
    gpufeed::detail::resize_rgbx_to_rgb(source.view(source_width, source_height), area, out, output,
                                        output, true);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}

// 4:2:0 planes of noise, padded as the decoder pads them, every row decoded.
struct noise_planes {
  static constexpr std::size_t luma_stride = source_width + 32;
  static constexpr std::size_t chroma_stride = source_width / 2 + 32;
  std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(
      luma_stride * source_height + 2 * chroma_stride * (source_height / 2) + 64);
  noise_planes() { fill_noise(bytes.data(), bytes.size()); }
  [[nodiscard]] gpufeed::detail::ycc_view view() const {
    std::uint8_t const* const cb = bytes.data() + luma_stride * source_height;
    std::uint8_t const* const cr = cb + chroma_stride * (source_height / 2);
    return {{bytes.data(), luma_stride, source_width, source_height, 1, 1},
            {cb, chroma_stride, source_width / 2, source_height / 2, 2, 2},
            {cr, chroma_stride, source_width / 2, source_height / 2, 2, 2},
            source_width,
            source_height,
            source_height};
  }
};

void resize_ycc(benchmark::State& state) {
  noise_planes const planes;
  auto const source = planes.view();
  std::vector<std::uint8_t> out(3 * output * output);
  crop_area const area = crop_of(state);
  for (auto _ : state) {
    gpufeed::detail::resize_ycc_to_rgb(source, area, out, output, output, true);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}

// A crop the output's size (CenterCrop(224) of a 256-pixel side): upsampling and colour only.
void copy_ycc(benchmark::State& state) {
  noise_planes const planes;
  auto const source = planes.view();
  std::vector<std::uint8_t> out(3 * output * output);
  bool const mirror = state.range(0) != 0;
  auto const x = static_cast<int>(state.range(1));
  for (auto _ : state) {
    gpufeed::detail::copy_ycc_to_rgb(source, x, 16, out, output, output, mirror);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}

// Enlarging (a crop under 224 x 224), shrinking a little (about Resize(256) + CenterCrop(224)
// of a 400-pixel side), shrinking in one axis only, and nearly the whole image.
BENCHMARK(resize_rgbx)
    ->ArgNames({"crop_w", "crop_h"})
    ->Args({150, 150})
    ->Args({300, 250})
    ->Args({300, 150})
    ->Args({450, 380});
BENCHMARK(resize_ycc)
    ->ArgNames({"crop_w", "crop_h"})
    ->Args({150, 150})
    ->Args({300, 250})
    ->Args({450, 380});

// x: the crop's left edge, on a chroma sample's first pixel (48: the centre of 320) or its second.
BENCHMARK(copy_ycc)->ArgNames({"mirror", "x"})->Args({0, 48})->Args({0, 49})->Args({1, 48});

}  // namespace
