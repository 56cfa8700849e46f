// The loader's counters: snapshot() against what was consumed, the leased slots, and snapshots
// taken from another thread.

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::loader;
using namespace gpufeed::test;  // NOLINT(google-build-using-namespace): test doubles

// ------------------------------------------------------------------------------------------------
// Counters.

TEST(loader_test, StatsMatchWhatWasConsumed) {
  std::size_t const n = 45;
  std::size_t const payload = 16;
  auto data = std::make_shared<echo_dataset>(n, payload);
  auto o = small_options(4, 3);
  o.prefetch_depth = 3;
  loader l{data, o};
  auto const bytes_per_sample = data->spec().bytes_per_sample();
  std::uint64_t batches = 0;
  std::uint64_t samples = 0;
  for (int i = 0; i < 7; ++i) {
    auto b = l.next();
    ASSERT_TRUE(b.has_value());
    ++batches;
    samples += b->size();
  }
  auto s = l.snapshot();
  EXPECT_EQ(s.batches, batches);
  EXPECT_EQ(s.samples, samples);
  EXPECT_EQ(s.bytes, samples * bytes_per_sample);
  EXPECT_GE(s.samples_read, samples);
  EXPECT_LE(s.samples_read, n);  // prefetch never reads past the epoch's plan
  EXPECT_EQ(s.skipped, 0U);
  EXPECT_EQ(s.failed_batches, 0U);
  EXPECT_TRUE(s.skipped_indices.empty());
  EXPECT_EQ(s.ring_slots, 3U);
  EXPECT_EQ(s.workers, 3U);
  EXPECT_LE(s.ring_ready + s.ring_leased, s.ring_slots);
  EXPECT_EQ(l.batch_bytes(), 4 * bytes_per_sample);
  // Each field's region of 4 samples padded to 256 bytes: index 32, context 96, payload 64.
  EXPECT_EQ(s.slot_bytes, 3U * 256U);
  EXPECT_EQ(s.host_bytes, s.ring_slots * s.slot_bytes);
  // Per slot and sample: its index (8 bytes), a failure record (the exception and the worker: 16)
  // and a skip entry (8).
  EXPECT_EQ(s.bookkeeping_bytes, s.ring_slots * 4 * 32);
  EXPECT_EQ(s.pinned_bytes, 0U);  // the host path pins nothing
  EXPECT_EQ(s.staging, "host");
  EXPECT_EQ(s.device, -1);
  EXPECT_GT(s.read_s, 0.0);
  EXPECT_LE(s.read_s, s.wall_s * s.workers + 1e-6);
  EXPECT_LE(s.slot_wait_s, s.wall_s * s.workers + 1e-6);
  EXPECT_LE(s.consumer_wait_s, s.wall_s + 1e-6);
  EXPECT_EQ(s.consumer_wait.count, batches) << "one wait recorded per next() that delivered";
  EXPECT_LE(s.stall_fraction(), 1.0 + 1e-9);
  // Each next() counts the slots ready as it takes its batch, that batch included.
  EXPECT_GE(s.ring_ready_mean, 1.0);
  EXPECT_LE(s.ring_ready_mean, 3.0);
  EXPECT_EQ(s.to_string().rfind("7 batches, 28 samples in ", 0), 0U) << s.to_string();

  // Through the end of the epoch and one more: totals add up.
  while (auto b = l.next()) {
    ++batches;
    samples += b->size();
  }
  auto t = l.snapshot();
  EXPECT_EQ(samples, n);
  EXPECT_EQ(t.batches, batches);
  EXPECT_EQ(t.samples, n);
  EXPECT_EQ(t.bytes, n * bytes_per_sample);
  EXPECT_GE(t.samples_read, n);
  EXPECT_GE(t.wall_s, s.wall_s);
  EXPECT_GE(t.read_s, s.read_s);
  EXPECT_LE(t.read_s, t.wall_s * t.workers + 1e-6);
  EXPECT_LE(t.consumer_wait_s, t.wall_s + 1e-6);
}

TEST(loader_test, RingLeasedCountsLiveBatches) {
  auto data = std::make_shared<echo_dataset>(40);
  auto o = small_options(4, 2);
  o.prefetch_depth = 4;
  loader l{data, o};
  EXPECT_EQ(l.snapshot().ring_leased, 0U);
  auto a = l.next();
  auto b = l.next();
  EXPECT_EQ(l.snapshot().ring_leased, 2U);
  a->release();
  EXPECT_EQ(l.snapshot().ring_leased, 1U);
  b.reset();
  EXPECT_EQ(l.snapshot().ring_leased, 0U);
}

TEST(loader_test, SnapshotFromAnotherThread) {
  std::size_t const n = 200;
  auto data = std::make_shared<echo_dataset>(n);
  auto o = small_options(2, 3);
  loader l{data, o};
  std::atomic<bool> done{false};
  std::atomic<std::size_t> polls{0};
  std::thread watcher{[&] {
    std::uint64_t last = 0;
    while (!done.load()) {
      auto s = l.snapshot();
      EXPECT_GE(s.batches, last) << "delivered batches went backwards";
      last = s.batches;
      (void)l.batches_per_epoch();
      (void)l.epoch();
      polls.fetch_add(1);
      std::this_thread::yield();
    }
  }};
  // Overlap for sure: the watcher polls before, during and after the epoch.
  ASSERT_TRUE(eventually([&] { return polls.load() > 0; }));
  auto records = drain_epoch(l);
  auto const polled = polls.load();
  EXPECT_TRUE(eventually([&] { return polls.load() > polled; }));
  done.store(true);
  watcher.join();
  EXPECT_EQ(records.size(), n / 2);
  EXPECT_EQ(l.snapshot().batches, n / 2);
}

}  // namespace
