#pragma once
// A fixed-size, log-scale histogram of durations, cheap enough for the loader's hot path.
//
// Buckets: durations below 8 ns each have their own bucket; above, every power of two is split
// into 4 equal buckets ([2^k, 1.25 x 2^k), [1.25 x 2^k, 1.5 x 2^k), ...), i.e. buckets of about
// 2^(1/4), up to 2^44 ns (about 4.9 hours, where the last bucket collects everything longer). A
// quantile is reported as its bucket's midpoint, so it is within 12.5 % of the exact value (and
// never above the largest value recorded).
//
// Recording is a handful of relaxed atomic loads and stores and no allocation. A histogram has
// one writer at a time (`record_exclusive`: a worker's own histogram, or one written under a
// lock), or several (`record`: a relaxed fetch_add per counter); any thread may read it at any
// time (`read_into`), and sees each counter whole, though not all counters of one instant.

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "gpufeed/stats.hpp"

namespace gpufeed::detail {

/// A plain copy of one or more histograms' counters: merged, then summarized.
struct latency_counts {
  static constexpr std::size_t octaves = 44;    // up to 2^44 ns
  static constexpr std::size_t per_octave = 4;  // buckets per power of two
  // Index 0 .. 171 below 2^44 ns, then one bucket for everything longer.
  static constexpr std::size_t buckets = per_octave * (octaves - 1) + 1;
  static constexpr std::int64_t max_tracked = std::int64_t{1} << octaves;

  std::array<std::uint64_t, buckets> counts{};
  std::uint64_t total_ns = 0;
  std::int64_t max_ns = 0;

  /// The bucket of a duration (negative durations count as 0).
  [[nodiscard]] static constexpr std::size_t bucket(std::int64_t ns) noexcept {
    if (ns < 8) {
      return ns < 0 ? 0 : static_cast<std::size_t>(ns);
    }
    if (ns >= max_tracked) {
      return buckets - 1;
    }
    auto const v = static_cast<std::uint64_t>(ns);
    auto const octave = static_cast<std::size_t>(std::bit_width(v)) - 1;  // >= 3
    auto const sub = static_cast<std::size_t>(v >> (octave - 2)) & 3U;
    return per_octave * (octave - 1) + sub;
  }
  /// The smallest duration in bucket `b` (the largest bucket's bound for b == buckets).
  [[nodiscard]] static constexpr std::int64_t lower_bound(std::size_t b) noexcept {
    if (b < 8) {
      return static_cast<std::int64_t>(b);
    }
    auto const octave = b / per_octave + 1;
    auto const sub = b % per_octave;
    return static_cast<std::int64_t>((per_octave + sub) << (octave - 2));
  }

  /// Number of durations recorded.
  [[nodiscard]] std::uint64_t count() const noexcept;
  /// Adds `other`'s counters to these.
  void merge(latency_counts const& other) noexcept;
  /// The `q`-quantile (0 < q <= 1) in nanoseconds: the midpoint of the bucket holding the
  /// ceil(q x count)-th smallest duration, capped at max_ns; 0 when empty.
  [[nodiscard]] double quantile_ns(double q) const noexcept;
  /// count, total, p50, p99 and max, in seconds.
  [[nodiscard]] stage_stats summary() const noexcept;
};

/// The histogram itself: atomics, written on the hot path, read by snapshots.
class latency_histogram {
 public:
  /// Records one duration. Only one thread may call this at a time (no read-modify-write).
  void record_exclusive(std::int64_t ns) noexcept {
    auto const b = latency_counts::bucket(ns);
    counts_[b].store(counts_[b].load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    auto const positive = ns > 0 ? ns : 0;
    total_ns_.store(
        total_ns_.load(std::memory_order_relaxed) + static_cast<std::uint64_t>(positive),
        std::memory_order_relaxed);
    if (positive > max_ns_.load(std::memory_order_relaxed)) {
      max_ns_.store(positive, std::memory_order_relaxed);
    }
  }
  /// Records one duration; any number of threads may call this at once.
  void record(std::int64_t ns) noexcept;
  /// The sum of the durations recorded so far (relaxed; safe while others record).
  [[nodiscard]] std::uint64_t total_ns() const noexcept {
    return total_ns_.load(std::memory_order_relaxed);
  }
  /// Adds this histogram's counters to `out`. Safe while others record.
  void read_into(latency_counts& out) const noexcept;

 private:
  std::array<std::atomic<std::uint64_t>, latency_counts::buckets> counts_{};
  std::atomic<std::uint64_t> total_ns_{0};
  std::atomic<std::int64_t> max_ns_{0};
};

}  // namespace gpufeed::detail
