#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "image_resample.hpp"

namespace gpufeed::detail::resample {

void make_taps(axis_taps& a, double start, double length, int window, int outputs) {
  if (a.start == start && a.length == length && a.window == window && a.outputs == outputs) return;
  double const scale = length / outputs;
  double const support = std::max(scale, 1.0);
  double const inverse_support = 1.0 / support;
  auto const n = static_cast<std::size_t>(outputs);
  // Each output's inputs [lo, hi): the pixels whose centres the triangle reaches.
  a.first.resize(n);
  a.scratch.resize(2 * n);
  int widest = 1;
  for (std::size_t i = 0; i < n; ++i) {
    double const c = start + (static_cast<double>(i) + 0.5) * scale;
    int const lo = std::clamp(floor_int(c - support + 0.5), 0, window - 1);
    int const hi = std::clamp(floor_int(c + support + 0.5), lo + 1, window);
    a.scratch[2 * i] = lo;
    a.scratch[2 * i + 1] = hi;
    widest = std::max(widest, hi - lo);
  }
  a.taps = widest;
  a.weights.assign(n * static_cast<std::size_t>(a.taps), 0);
  std::array<double, 64> local{};
  std::vector<double> wide;  // only for a reduction by more than about 30
  double* const raw = widest <= static_cast<int>(local.size())
                          ? local.data()
                          : (wide.resize(static_cast<std::size_t>(widest)), wide.data());
  for (std::size_t i = 0; i < n; ++i) {
    double const c = start + (static_cast<double>(i) + 0.5) * scale;
    auto const lo = static_cast<int>(a.scratch[2 * i]);
    auto const hi = static_cast<int>(a.scratch[2 * i + 1]);
    double sum = 0;
    for (int x = lo; x < hi; ++x) {
      double const w = std::max(0.0, 1.0 - std::abs(x + 0.5 - c) * inverse_support);
      raw[x - lo] = w;
      sum += w;
    }
    if (sum <= 0) {  // a sample point between pixels the triangle misses: the nearest one
      std::fill(raw, raw + (hi - lo), 0.0);
      raw[0] = 1;
      sum = 1;
    }
    // Start early enough that all `taps` inputs exist.
    int const first = std::max(0, std::min(lo, window - a.taps));
    a.first[i] = first;
    std::int16_t* w = a.weights.data() + i * static_cast<std::size_t>(a.taps);
    double const to_fixed = weight_one / sum;
    int total = 0;
    int largest = lo - first;
    for (int x = lo; x < hi; ++x) {
      auto const q = static_cast<int>(raw[x - lo] * to_fixed + 0.5);
      w[x - first] = static_cast<std::int16_t>(std::min(q, int{weight_max}));
      total += q;
      if (q > w[largest]) largest = x - first;
    }
    // Sums to one (2^15); a lone weight of one stays at weight_max and is copied instead.
    w[largest] =
        static_cast<std::int16_t>(std::clamp(w[largest] + weight_one - total, 0, int{weight_max}));
  }
  a.start = start;
  a.length = length;
  a.window = window;
  a.outputs = outputs;
}

}  // namespace gpufeed::detail::resample
