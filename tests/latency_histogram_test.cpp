// latency_histogram: the log-scale histogram behind stats' per-stage percentiles.

#include "core/metrics/latency_histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

namespace {

using gpufeed::detail::latency_counts;
using gpufeed::detail::latency_histogram;

latency_counts counts_of(latency_histogram const& h) {
  latency_counts c;
  h.read_into(c);
  return c;
}

// The exact q-quantile as the histogram defines it: the ceil(q x n)-th smallest value.
std::int64_t exact_quantile(std::vector<std::int64_t> values, double q) {
  std::sort(values.begin(), values.end());
  auto const rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::max<std::size_t>(rank, 1) - 1];
}

TEST(latency_histogram_test, EveryBucketHoldsExactlyItsRange) {
  // Walk every value up to 2^20 and a sample above: each lies in [lower(b), lower(b + 1)).
  for (std::int64_t v = 0; v < (1 << 20); ++v) {
    auto const b = latency_counts::bucket(v);
    ASSERT_LE(latency_counts::lower_bound(b), v) << v;
    ASSERT_LT(v, latency_counts::lower_bound(b + 1)) << v;
  }
  std::mt19937_64 random{7};
  for (int i = 0; i < 100'000; ++i) {
    auto const v = static_cast<std::int64_t>(random() % latency_counts::max_tracked);
    auto const b = latency_counts::bucket(v);
    ASSERT_LT(b, latency_counts::buckets - 1) << v;
    ASSERT_LE(latency_counts::lower_bound(b), v) << v;
    ASSERT_LT(v, latency_counts::lower_bound(b + 1)) << v;
  }
}

TEST(latency_histogram_test, BucketsAreAQuarterOctaveWide) {
  for (std::size_t b = 8; b + 1 < latency_counts::buckets; ++b) {
    auto const low = latency_counts::lower_bound(b);
    auto const high = latency_counts::lower_bound(b + 1);
    ASSERT_GT(high, low) << b;
    ASSERT_LE(4 * (high - low), low) << b;  // width <= a quarter of the lower bound
  }
}

TEST(latency_histogram_test, OutOfRangeDurationsLandInTheEndBuckets) {
  EXPECT_EQ(latency_counts::bucket(-5), 0U);
  EXPECT_EQ(latency_counts::bucket(latency_counts::max_tracked), latency_counts::buckets - 1);
  EXPECT_EQ(latency_counts::bucket(INT64_MAX), latency_counts::buckets - 1);
  latency_histogram h;
  h.record_exclusive(-5);
  h.record_exclusive(INT64_MAX / 2);
  auto const c = counts_of(h);
  EXPECT_EQ(c.count(), 2U);
  EXPECT_EQ(c.max_ns, INT64_MAX / 2);
  EXPECT_EQ(c.total_ns, static_cast<std::uint64_t>(INT64_MAX / 2));  // the negative one as 0
  EXPECT_DOUBLE_EQ(c.quantile_ns(0.5), 0.0);
  EXPECT_LE(c.quantile_ns(1.0), static_cast<double>(c.max_ns));
}

TEST(latency_histogram_test, EmptyHistogramSummarizesToZero) {
  latency_histogram h;
  auto const s = counts_of(h).summary();
  EXPECT_EQ(s.count, 0U);
  EXPECT_EQ(s.total_s, 0.0);
  EXPECT_EQ(s.p50_s, 0.0);
  EXPECT_EQ(s.p99_s, 0.0);
  EXPECT_EQ(s.max_s, 0.0);
  EXPECT_EQ(s.mean_s(), 0.0);
}

TEST(latency_histogram_test, CountTotalAndMaxAreExactQuantilesWithinAnEighth) {
  // Log-normal durations around 100 us, spread over several octaves.
  std::mt19937_64 random{42};
  std::lognormal_distribution<double> duration{std::log(100'000.0), 1.0};
  std::vector<std::int64_t> values;
  latency_histogram h;
  std::uint64_t total = 0;
  for (int i = 0; i < 50'000; ++i) {
    auto const v = static_cast<std::int64_t>(duration(random));
    values.push_back(v);
    total += static_cast<std::uint64_t>(v);
    h.record_exclusive(v);
  }
  auto const c = counts_of(h);
  EXPECT_EQ(c.count(), values.size());
  EXPECT_EQ(c.total_ns, total);
  EXPECT_EQ(c.max_ns, *std::max_element(values.begin(), values.end()));
  for (double q : {0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    auto const exact = static_cast<double>(exact_quantile(values, q));
    EXPECT_NEAR(c.quantile_ns(q), exact, 0.125 * exact) << "q = " << q;
  }
  auto const s = c.summary();
  EXPECT_EQ(s.count, values.size());
  EXPECT_NEAR(s.total_s, static_cast<double>(total) * 1e-9, 1e-9);
  EXPECT_NEAR(s.p50_s, static_cast<double>(exact_quantile(values, 0.5)) * 1e-9,
              0.125 * static_cast<double>(exact_quantile(values, 0.5)) * 1e-9);
  EXPECT_LE(s.p50_s, s.p99_s);
  EXPECT_LE(s.p99_s, s.max_s);
}

TEST(latency_histogram_test, SmallValuesAreExact) {
  latency_histogram h;
  for (std::int64_t v = 0; v < 8; ++v) {
    h.record_exclusive(v);
  }
  auto const c = counts_of(h);
  EXPECT_DOUBLE_EQ(c.quantile_ns(1.0 / 8), 0.0);
  EXPECT_DOUBLE_EQ(c.quantile_ns(0.5), 3.0);
  EXPECT_DOUBLE_EQ(c.quantile_ns(1.0), 7.0);
}

TEST(latency_histogram_test, MergeAddsCountsAndKeepsTheLargestMax) {
  latency_histogram a;
  latency_histogram b;
  for (int i = 0; i < 100; ++i) {
    a.record_exclusive(1'000);
  }
  for (int i = 0; i < 300; ++i) {
    b.record_exclusive(1'000'000);
  }
  latency_counts merged = counts_of(a);
  merged.merge(counts_of(b));
  EXPECT_EQ(merged.count(), 400U);
  EXPECT_EQ(merged.total_ns, 100U * 1'000 + 300U * 1'000'000);
  EXPECT_EQ(merged.max_ns, 1'000'000);
  EXPECT_NEAR(merged.quantile_ns(0.2), 1'000.0, 125.0);  // rank 80: among the small ones
  EXPECT_NEAR(merged.quantile_ns(0.5), 1'000'000.0, 125'000.0);
  // read_into adds to what is there, as merge does.
  latency_counts both;
  a.read_into(both);
  b.read_into(both);
  EXPECT_EQ(both.counts, merged.counts);
}

TEST(latency_histogram_test, ConcurrentRecordsLoseNothing) {
  latency_histogram h;
  constexpr int threads = 4;
  constexpr int per_thread = 20'000;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&h, t] {
      for (int i = 0; i < per_thread; ++i) {
        h.record(1 + (i % 1000) + t);
      }
    });
  }
  for (auto& t : pool) {
    t.join();
  }
  auto const c = counts_of(h);
  EXPECT_EQ(c.count(), std::uint64_t{threads} * per_thread);
  EXPECT_EQ(c.max_ns, 1000 + threads - 1);
  std::uint64_t expected_total = 0;
  for (int t = 0; t < threads; ++t) {
    for (int i = 0; i < per_thread; ++i) {
      expected_total += static_cast<std::uint64_t>(1 + (i % 1000) + t);
    }
  }
  EXPECT_EQ(c.total_ns, expected_total);
}

TEST(latency_histogram_test, ReadersSeeAGrowingCountWhileOneThreadRecords) {
  latency_histogram h;
  constexpr std::uint64_t records = 50'000;
  std::atomic<bool> done{false};
  std::thread writer{[&] {
    for (std::uint64_t i = 0; i < records; ++i) {
      h.record_exclusive(static_cast<std::int64_t>(i % 5000));
    }
    done.store(true);
  }};
  std::uint64_t last = 0;
  while (!done.load()) {
    auto const seen = counts_of(h).count();
    ASSERT_GE(seen, last);
    ASSERT_LE(seen, records);
    last = seen;
  }
  writer.join();
  EXPECT_EQ(counts_of(h).count(), records);
}

}  // namespace
