#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "image_resample.hpp"

namespace gpufeed::detail::resample {

namespace {

// A filter pass down the rows: output row j is the weighted sum of input rows taps.first[j]
// .. + taps.taps - 1, `count` values each; rows of int16 (Q7) or of bytes; written turned.
template <class In, int Group>
void filter_pass_plain(In const* in, std::size_t in_stride, std::size_t count,
                       axis_taps const& taps, int out_rows, pass_output out) noexcept {
  auto const n = static_cast<std::size_t>(taps.taps);
  for (int j = 0; j < out_rows; ++j) {
    std::int16_t const* const w = taps.weights.data() + static_cast<std::size_t>(j) * n;
    In const* const first =
        in + static_cast<std::size_t>(taps.first[static_cast<std::size_t>(j)]) * in_stride;
    std::int16_t* const dst = row_start<Group>(out, j, out_rows);
    if (auto const* one = std::find(w, w + n, weight_max); one != w + n) {  // as the AVX2 pass
      In const* const src = first + static_cast<std::size_t>(one - w) * in_stride;
      for (std::size_t i = 0; i < count; ++i) value_at<Group>(dst, i, out.stride) = q7(src[i]);
      continue;
    }
    for (std::size_t i = 0; i < count; ++i) {
      std::int16_t acc = 0;
      for (std::size_t k = 0; k < n; ++k) {
        acc = static_cast<std::int16_t>(acc + step(q7(first[k * in_stride + i]), w[k]));
      }
      value_at<Group>(dst, i, out.stride) = acc;
    }
  }
}

void narrow_plain(std::int16_t const* in, std::size_t pixels, bool /*more_follow*/,
                  std::uint8_t* out) noexcept {
  narrow_portable(in, 0, pixels, out);
}
void copy_row_plain(std::uint8_t const* src, int width, bool mirror, std::uint8_t* dst) noexcept {
  copy_row_portable(src, 0, width, mirror, dst);
}
void ycc_to_rgb_plain(std::int16_t const* y, std::int16_t const* cb, std::int16_t const* cr,
                      std::size_t count, bool /*more_follow*/, std::uint8_t* out) noexcept {
  ycc_to_rgb_portable(y, cb, cr, 0, count, out);
}

}  // namespace

kernels const& portable_kernels() noexcept {
  static kernels const table{filter_pass_plain<std::int16_t, 4>,
                             filter_pass_plain<std::uint8_t, 4>,
                             filter_pass_plain<std::int16_t, 1>,
                             filter_pass_plain<std::uint8_t, 1>,
                             narrow_plain,
                             copy_row_plain,
                             ycc_to_rgb_plain};
  return table;
}

}  // namespace gpufeed::detail::resample
