#include "summary_stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>

namespace gpufeed::bench {

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  std::size_t const mid = values.size() / 2;
  if (values.size() % 2 == 1) return values[mid];
  return (values[mid - 1] + values[mid]) / 2.0;
}

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  double const clamped = std::clamp(q, 0.0, 100.0);
  auto const count = static_cast<double>(values.size());
  auto rank = static_cast<std::size_t>(std::ceil(clamped / 100.0 * count));
  rank = std::clamp<std::size_t>(rank, 1, values.size());
  return values[rank - 1];
}

double mean(std::vector<double> const& values) {
  if (values.empty()) return 0.0;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

}  // namespace gpufeed::bench
