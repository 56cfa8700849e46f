#pragma once
// Order statistics for repeated measurements on a noisy machine.

#include <vector>

namespace gpufeed::bench {

/// The median (mean of the middle two for an even count); 0 for an empty set.
[[nodiscard]] double median(std::vector<double> values);
/// The nearest-rank percentile, `q` in [0, 100]; 0 for an empty set.
[[nodiscard]] double percentile(std::vector<double> values, double q);
/// The arithmetic mean; 0 for an empty set.
[[nodiscard]] double mean(std::vector<double> const& values);
/// numerator / denominator, or 0 when the denominator is not positive (an empty run).
[[nodiscard]] inline double ratio_or_zero(double numerator, double denominator) noexcept {
  return denominator > 0 ? numerator / denominator : 0.0;
}

}  // namespace gpufeed::bench
