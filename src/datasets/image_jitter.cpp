// Named image_*.cpp so that src/CMakeLists.txt's glob of the image datasets' sources builds it.
#include "gpufeed/detail/image_jitter.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace gpufeed::detail {

namespace {

// Luma weights in 14-bit fixed point (0.299, 0.587, 0.114 times 2^14, summing to 2^14).
constexpr std::int32_t luma_r = 4899;
constexpr std::int32_t luma_g = 9617;
constexpr std::int32_t luma_b = 1868;
static_assert(luma_r + luma_g + luma_b == 1 << 14);

std::uint8_t saturate(double v) noexcept {
  return static_cast<std::uint8_t>(std::clamp(std::lround(v), 0L, 255L));
}

void apply_lut(std::span<std::uint8_t> image, std::array<std::uint8_t, 256> const& lut) noexcept {
  for (auto& v : image) v = lut[v];
}

}  // namespace

void adjust_brightness(std::span<std::uint8_t> rgb, double factor) noexcept {
  std::array<std::uint8_t, 256> lut{};
  for (std::size_t v = 0; v < lut.size(); ++v) lut[v] = saturate(static_cast<double>(v) * factor);
  apply_lut(rgb, lut);
}

void adjust_contrast(std::span<std::uint8_t> rgb, double factor) noexcept {
  // Integer sums (exact): the per-pixel double arithmetic this replaced cost more than the
  // decode's colour conversion.
  std::uint64_t sum = 0;
  std::size_t const pixels = rgb.size() / 3;
  std::uint8_t const* p = rgb.data();
  for (std::size_t i = 0; i < pixels; ++i, p += 3) {
    sum += static_cast<std::uint32_t>(luma_r * p[0] + luma_g * p[1] + luma_b * p[2]);
  }
  double const mean =
      pixels > 0 ? static_cast<double>(sum) / (static_cast<double>(pixels) * (1 << 14)) : 0;
  std::array<std::uint8_t, 256> lut{};
  for (std::size_t v = 0; v < lut.size(); ++v) {
    lut[v] = saturate(factor * static_cast<double>(v) + (1 - factor) * mean);
  }
  apply_lut(rgb, lut);
}

namespace {

// out = f v + (1 - f) luma in fixed point: f with 12 fraction bits, v and luma with 8, the sum
// with 20, rounded half up by the shift. `Wide` holds f (v << 8) + (1 - f) (luma << 8): int32
// for f up to 4 (the sum stays under 2^31), int64 beyond.
template <typename Wide>
void blend_with_luma(std::span<std::uint8_t> rgb, Wide fq) noexcept {
  Wide const gq = 4096 - fq;
  std::size_t const pixels = rgb.size() / 3;
  std::uint8_t* p = rgb.data();
  auto const blend = [fq](Wide v, Wide gray) noexcept {
    Wide const x = (fq * (v << 8) + gray + (Wide{1} << 19)) >> 20;  // NOLINT(hicpp-signed-bitwise)
    return static_cast<std::uint8_t>(std::clamp<Wide>(x, 0, 255));
  };
  for (std::size_t i = 0; i < pixels; ++i, p += 3) {
    Wide const luma8 = (luma_r * p[0] + luma_g * p[1] + luma_b * p[2] + 32) >> 6;
    Wide const gray = gq * luma8;
    p[0] = blend(p[0], gray);
    p[1] = blend(p[1], gray);
    p[2] = blend(p[2], gray);
  }
}

}  // namespace

void adjust_saturation(std::span<std::uint8_t> rgb, double factor) noexcept {
  // Fixed point, not per-value double arithmetic and lround: that cost more than the decode's
  // colour conversion.
  double const f = std::clamp(factor, 0.0, 1e6);
  auto const fq = static_cast<std::int64_t>(std::llround(f * 4096.0));
  if (fq <= 4 * 4096) {
    blend_with_luma<std::int32_t>(rgb, static_cast<std::int32_t>(fq));
  } else {
    blend_with_luma<std::int64_t>(rgb, fq);
  }
}

void adjust_hue(std::span<std::uint8_t> rgb, int height, int width, double shift) {
  cv::Mat image(height, width, CV_8UC3, rgb.data());
  thread_local cv::Mat hsv;
  cv::cvtColor(image, hsv, cv::COLOR_RGB2HSV_FULL);  // hue in 0..255 (a full turn)
  auto const delta = static_cast<int>(std::lround(shift * 256.0));
  auto const cols = static_cast<std::size_t>(hsv.cols);
  for (int r = 0; r < hsv.rows; ++r) {
    auto* p = hsv.ptr<std::uint8_t>(r);
    for (std::size_t c = 0; c < cols; ++c) {
      p[3 * c] = static_cast<std::uint8_t>((p[3 * c] + delta + 256) & 0xFF);
    }
  }
  cv::cvtColor(hsv, image, cv::COLOR_HSV2RGB_FULL);
}

}  // namespace gpufeed::detail
