// Micro-benchmark of the image datasets' resize (gpufeed::detail::resize_rgbx_to_rgb,
// resize_ycc_to_rgb and copy_ycc_to_rgb): one thread, crops of a 500 x 400 image (the size of the
// Python image benchmark's photographs) to 224 x 224, mirrored, as RandomResizedCrop and the centre
// crop make them, and whole images. The source pixels are noise: the resize does the same work
// whatever they are.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "image/resample/image_resize.hpp"

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
class noise_planes {
 public:
  explicit noise_planes(int width = source_width, int height = source_height)
      : width_{width}, height_{height} {
    fill_noise(bytes_.data(), bytes_.size());
  }
  [[nodiscard]] gpufeed::detail::ycc_view view() const {
    std::uint8_t const* const cb = bytes_.data() + luma_stride_ * to_size(height_);
    std::uint8_t const* const cr = cb + chroma_stride_ * to_size(height_ / 2);
    return {{bytes_.data(), luma_stride_, width_, height_, 1, 1},
            {cb, chroma_stride_, width_ / 2, height_ / 2, 2, 2},
            {cr, chroma_stride_, width_ / 2, height_ / 2, 2, 2},
            width_,
            height_,
            {0, 0, width_, height_}};
  }

 private:
  static std::size_t to_size(int n) { return static_cast<std::size_t>(n); }
  int width_;
  int height_;
  std::size_t luma_stride_ = to_size(width_) + 32;
  std::size_t chroma_stride_ = to_size(width_ / 2) + 32;
  std::vector<std::uint8_t> bytes_ = std::vector<std::uint8_t>(
      luma_stride_ * to_size(height_) + 2 * chroma_stride_ * to_size(height_ / 2) + 64);
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

// The whole of a width x height image (RandomResizedCrop with scale 1, gpufeed-bench decode's
// `whole` case): 320 x 256 is its generated set's size, where the chroma (160 x 128) is enlarged
// by 7/5 and 7/4, which makes every seventh output row and column a copy of an input one;
// 1600 x 1200 is a reduction by 5-7 (15 taps: as where DCT scaling is off).
void resize_ycc_whole(benchmark::State& state) {
  int const width = static_cast<int>(state.range(0));
  int const height = static_cast<int>(state.range(1));
  noise_planes const planes{width, height};
  auto const source = planes.view();
  std::vector<std::uint8_t> out(3 * output * output);
  crop_area const area{0, 0, static_cast<double>(width), static_cast<double>(height)};
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
BENCHMARK(resize_ycc_whole)
    ->ArgNames({"width", "height"})
    ->Args({320, 256})
    ->Args({500, 400})
    ->Args({1600, 1200});

// x: the crop's left edge, on a chroma sample's first pixel (48: the centre of 320) or its second.
BENCHMARK(copy_ycc)->ArgNames({"mirror", "x"})->Args({0, 48})->Args({0, 49})->Args({1, 48});

}  // namespace
