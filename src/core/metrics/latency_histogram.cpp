#include "core/metrics/latency_histogram.hpp"

#include <algorithm>
#include <cmath>

namespace gpufeed::detail {

std::uint64_t latency_counts::count() const noexcept {
  std::uint64_t n = 0;
  for (auto c : counts) {
    n += c;
  }
  return n;
}

void latency_counts::merge(latency_counts const& other) noexcept {
  for (std::size_t b = 0; b < buckets; ++b) {
    counts[b] += other.counts[b];
  }
  total_ns += other.total_ns;
  max_ns = std::max(max_ns, other.max_ns);
}

double latency_counts::quantile_ns(double q) const noexcept {
  auto const n = count();
  if (n == 0) {
    return 0.0;
  }
  q = std::clamp(q, 0.0, 1.0);
  auto const rank =
      std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(n))));
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < buckets; ++b) {
    seen += counts[b];
    if (seen >= rank) {
      // Buckets below 8 ns hold one value each; the midpoint of the others is within 12.5 %.
      auto const low = static_cast<double>(lower_bound(b));
      auto const mid = b < 8 ? low : 0.5 * (low + static_cast<double>(lower_bound(b + 1)));
      return std::min(mid, static_cast<double>(max_ns));
    }
  }
  return static_cast<double>(max_ns);  // only when counters were read mid-update
}

stage_stats latency_counts::summary() const noexcept {
  stage_stats out;
  out.count = count();
  out.total_s = static_cast<double>(total_ns) * 1e-9;
  out.p50_s = quantile_ns(0.50) * 1e-9;
  out.p99_s = quantile_ns(0.99) * 1e-9;
  out.max_s = static_cast<double>(max_ns) * 1e-9;
  return out;
}

void latency_histogram::record(std::int64_t ns) noexcept {
  auto const positive = ns > 0 ? ns : 0;
  counts_[latency_counts::bucket(ns)].fetch_add(1, std::memory_order_relaxed);
  total_ns_.fetch_add(static_cast<std::uint64_t>(positive), std::memory_order_relaxed);
  auto seen = max_ns_.load(std::memory_order_relaxed);
  while (positive > seen &&
         !max_ns_.compare_exchange_weak(seen, positive, std::memory_order_relaxed)) {
  }
}

void latency_histogram::read_into(latency_counts& out) const noexcept {
  for (std::size_t b = 0; b < latency_counts::buckets; ++b) {
    out.counts[b] += counts_[b].load(std::memory_order_relaxed);
  }
  out.total_ns += total_ns_.load(std::memory_order_relaxed);
  out.max_ns = std::max(out.max_ns, max_ns_.load(std::memory_order_relaxed));
}

}  // namespace gpufeed::detail
