// diagnosis: diagnose() on hand-built statistics for every kind, and on real loaders made to be
// input-bound, consumer-bound and ring-bound (with large margins: no figure here is close to a
// threshold, so a busy machine does not change the verdict).

#include "gpufeed/diagnosis.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::bottleneck;
using gpufeed::diagnose;
using gpufeed::stats;
using namespace std::chrono_literals;

// A 10 s run after a 0.1 s start-up, 1000 batches, 4 workers, 4 slots; nothing waits.
stats quiet_run() {
  stats s;
  s.wall_s = 10.1;
  s.first_batch_s = 0.1;
  s.first_wait_s = 0.09;
  s.consumer_wait_s = 0.09;
  s.batches = 1000;
  s.samples = 64'000;
  s.workers = 4;
  s.ring_slots = 4;
  s.read_s = 4.0;  // 10 % busy
  s.read.count = 64'000;
  s.read.total_s = s.read_s;
  s.consumer_wait.count = 1000;
  s.consumer_wait.p50_s = 2e-6;
  s.consumer_wait.p99_s = 1e-5;
  return s;
}

// `wait_s` of the consumer's time spent waiting after the first batch.
stats with_stall(stats s, double wait_s) {
  s.consumer_wait_s = s.first_wait_s + wait_s;
  s.consumer_wait.total_s = s.consumer_wait_s;
  return s;
}

// Whether `text` contains every one of `phrases`; a failure names the first missing one and
// quotes the text.
testing::AssertionResult says(std::string const& text,
                              std::initializer_list<std::string_view> phrases) {
  for (auto const phrase : phrases) {
    if (text.find(phrase) == std::string::npos) {
      return testing::AssertionFailure() << "no \"" << phrase << "\" in: " << text;
    }
  }
  return testing::AssertionSuccess();
}

TEST(diagnosis_test, KindsHaveTheirNames) {
  EXPECT_STREQ(gpufeed::to_string(bottleneck::not_enough_data), "not_enough_data");
  EXPECT_STREQ(gpufeed::to_string(bottleneck::gpu_bound), "gpu_bound");
  EXPECT_STREQ(gpufeed::to_string(bottleneck::input_bound), "input_bound");
  EXPECT_STREQ(gpufeed::to_string(bottleneck::copy_bound), "copy_bound");
  EXPECT_STREQ(gpufeed::to_string(bottleneck::ring_too_shallow), "ring_too_shallow");
  EXPECT_STREQ(gpufeed::to_string(bottleneck::unknown), "unknown");
}

TEST(diagnosis_test, TooFewBatchesIsNotEnoughData) {
  EXPECT_EQ(diagnose(stats{}).kind, bottleneck::not_enough_data);
  auto s = with_stall(quiet_run(), 5.0);
  s.batches = gpufeed::diagnosis_min_batches;  // the first one does not count
  auto const d = diagnose(s);
  EXPECT_EQ(d.kind, bottleneck::not_enough_data);
  EXPECT_TRUE(says(d.sentence, {"7 batches after the first"}));
  s.batches = gpufeed::diagnosis_min_batches + 1;
  EXPECT_NE(diagnose(s).kind, bottleneck::not_enough_data);
}

TEST(diagnosis_test, StallBelowOnePercentIsGpuBound) {
  auto const s = with_stall(quiet_run(), 0.05);  // 0.5 %
  auto const d = diagnose(s);
  EXPECT_EQ(d.kind, bottleneck::gpu_bound);
  EXPECT_TRUE(says(d.sentence, {"not the bottleneck", "0.50%", "larger batch", "never applied"}));
  // A host run names no GPU; a CUDA run does.
  EXPECT_EQ(d.sentence.find("GPU"), std::string::npos) << d.sentence;
  auto on_gpu = s;
  on_gpu.device = 0;
  EXPECT_TRUE(says(diagnose(on_gpu).sentence, {"to use the GPU better"}));
  // The start-up wait does not count: 1 s of waiting for the first batch is still gpu-bound.
  auto slow_start = s;
  slow_start.first_wait_s = 1.0;
  slow_start.first_batch_s = 1.0;
  slow_start.consumer_wait_s = 1.05;
  slow_start.wall_s = 11.0;
  EXPECT_EQ(diagnose(slow_start).kind, bottleneck::gpu_bound);
  EXPECT_GT(slow_start.stall_fraction(), 0.05);
}

TEST(diagnosis_test, GpuBoundWithAnIdleGpuPointsAtTheStepsHostSide) {
  auto const s = with_stall(quiet_run(), 0.01);
  auto const d = diagnose(s, gpufeed::gpu_utilization{12.0, 30.0});
  EXPECT_EQ(d.kind, bottleneck::gpu_bound);
  EXPECT_TRUE(says(d.sentence, {"busy only 12%", "host-side"}));
}

TEST(diagnosis_test, BusyWorkersAndAWaitingConsumerAreInputBound) {
  auto s = with_stall(quiet_run(), 4.0);  // 40 %
  s.read_s = 0.95 * 4 * s.wall_s;
  s.read.total_s = s.read_s;
  s.read.p99_s = 3e-3;
  s.slot_wait_s = 0.01;
  s.consumer_wait.p50_s = 4e-3;
  s.consumer_wait.p99_s = 6e-3;
  auto const d = diagnose(s);
  EXPECT_EQ(d.kind, bottleneck::input_bound);
  EXPECT_TRUE(says(d.sentence, {"40.0%", "95%", "add workers (now 4)", "cache"}));
}

TEST(diagnosis_test, IdleWorkersWithFullRingAndAWaitingConsumerAreRingTooShallow) {
  auto s = with_stall(quiet_run(), 1.0);  // 10 %
  s.ring_slots = 2;
  s.slot_wait_s = 0.8 * 4 * s.wall_s;
  s.slot_wait.total_s = s.slot_wait_s;
  auto const d = diagnose(s);
  EXPECT_EQ(d.kind, bottleneck::ring_too_shallow);
  EXPECT_TRUE(says(d.sentence, {"80%", "raise prefetch_depth (now 2)"}));
}

TEST(diagnosis_test, BurstyWaitsWithIdleWorkersAreRingTooShallow) {
  auto s = with_stall(quiet_run(), 0.5);  // 5 %, workers 10 % busy, no slot wait
  s.consumer_wait.p50_s = 1e-5;
  s.consumer_wait.p99_s = 0.04;
  EXPECT_EQ(diagnose(s).kind, bottleneck::ring_too_shallow);
  // The same stall spread evenly over every batch is not a burst: nothing stands out.
  s.consumer_wait.p50_s = 5e-4;
  s.consumer_wait.p99_s = 6e-4;
  auto const d = diagnose(s);
  EXPECT_EQ(d.kind, bottleneck::unknown);
  EXPECT_TRUE(says(d.sentence, {"trace_events"}));
}

// A short run: 50 batches, whose p99 wait is the first batch's start-up (workers starting,
// files opening), not a burst; the same figures over 1000 waits are one.
TEST(diagnosis_test, TheFirstBatchsWaitIsNoBurstInAShortRun) {
  auto s = with_stall(quiet_run(), 0.5);
  s.batches = 50;
  s.consumer_wait.count = 50;
  s.consumer_wait.p50_s = 1e-5;
  s.consumer_wait.p99_s = 0.09;  // = first_wait_s
  EXPECT_EQ(diagnose(s).kind, bottleneck::unknown);
  s.batches = 1000;
  s.consumer_wait.count = 1000;
  EXPECT_EQ(diagnose(s).kind, bottleneck::ring_too_shallow);
  s.consumer_wait.count = gpufeed::burst_min_waits - 1;
  EXPECT_EQ(diagnose(s).kind, bottleneck::unknown);
}

// The CUDA path: 1000 batches copied, each copy timed.
stats cuda_run(stats s) {
  s.device = 0;
  s.staging = "pinned";
  s.copies = 1000;
  s.timed_copies = 1000;
  return s;
}

TEST(diagnosis_test, CopiesTakingTheWholeBatchPeriodAreCopyBound) {
  // 10 ms between batches, of which the copy takes 9 ms: the copy engine is saturated, even
  // though next() barely waits (copies are asynchronous to the host).
  auto s = cuda_run(with_stall(quiet_run(), 0.02));
  s.h2d_s = 1000 * 8e-3;
  s.transform_s = 1000 * 1e-3;
  s.h2d.count = 1000;
  s.h2d.p99_s = 9e-3;
  auto const d = diagnose(s);
  EXPECT_EQ(d.kind, bottleneck::copy_bound);
  EXPECT_TRUE(says(d.sentence, {"9.00 ms", "uint8", "pinned", "larger batches"}));
  // The same figures on the host path (no timed copies) are not about copies.
  auto host = s;
  host.device = -1;
  host.timed_copies = 0;
  EXPECT_EQ(diagnose(host).kind, bottleneck::gpu_bound);
}

TEST(diagnosis_test, WorkersWaitingForCopiesAreCopyBound) {
  auto s = cuda_run(with_stall(quiet_run(), 2.0));
  s.h2d_s = 1000 * 1e-3;  // 10 % of the period
  s.copy_wait_s = 0.5 * 4 * s.wall_s;
  auto const d = diagnose(s);
  EXPECT_EQ(d.kind, bottleneck::copy_bound);
  EXPECT_TRUE(says(d.sentence, {"workers waited 50%"}));
  // Without the copy wait, busy workers make it input-bound instead.
  s.copy_wait_s = 0;
  s.read_s = 0.9 * 4 * s.wall_s;
  EXPECT_EQ(diagnose(s).kind, bottleneck::input_bound);
}

TEST(diagnosis_test, LowUtilizationWarningCarriesTheLikelyCause) {
  auto s = with_stall(quiet_run(), 4.0);
  s.read_s = 0.95 * 4 * s.wall_s;
  std::vector<double> busy_gpu(30, 85.0);
  EXPECT_FALSE(gpufeed::low_utilization_warning(busy_gpu, s).has_value());
  EXPECT_FALSE(gpufeed::low_utilization_warning({}, s).has_value());
  std::vector<double> idle_gpu(30, 12.0);
  auto const warning = gpufeed::low_utilization_warning(idle_gpu, s);
  ASSERT_TRUE(warning.has_value());
  EXPECT_TRUE(says(*warning, {"averaged 12% over the last 30 samples (below 30%)", "Input-bound",
                              "GPU was busy 12%"}));
  // The threshold is the caller's.
  EXPECT_FALSE(gpufeed::low_utilization_warning(idle_gpu, s, 10.0).has_value());
}

// ---- real loaders ------------------------------------------------------------------------------

// Runs `batches` batches through `loader`, sleeping `step` per batch (the training step).
stats run(gpufeed::loader& loader, std::size_t batches, std::chrono::microseconds step) {
  for (std::size_t i = 0; i < batches; ++i) {
    auto batch = loader.next();
    EXPECT_TRUE(batch.has_value());
    if (step.count() > 0) {
      std::this_thread::sleep_for(step);
    }
  }
  return loader.snapshot();
}

TEST(diagnosis_test, SlowReadsAndAFastConsumerAreInputBound) {
  // 2 workers, 2 ms per sample, 8 samples per batch: about 8 ms per batch, consumed at once.
  auto data = std::make_shared<gpufeed::test::sleepy_dataset>(
      100'000, [](std::size_t) { return std::chrono::microseconds{2000}; });
  gpufeed::loader loader{data, {.batch_size = 8, .workers = 2, .prefetch_depth = 4}};
  auto const s = run(loader, 30, 0us);
  auto const d = diagnose(s);
  EXPECT_EQ(d.kind, bottleneck::input_bound) << d.sentence << "\n" << s.to_string();
  EXPECT_GT(s.steady_stall_fraction(), 0.5) << s.to_string();
}

TEST(diagnosis_test, FastReadsAndASlowConsumerAreGpuBound) {
  // Reads take microseconds; the step takes 20 ms; 3 batches wait ready in the ring.
  auto data = std::make_shared<gpufeed::test::echo_dataset>(100'000);
  gpufeed::loader loader{data, {.batch_size = 8, .workers = 2, .prefetch_depth = 4}};
  auto const s = run(loader, 30, 20ms);
  auto const d = diagnose(s);
  EXPECT_EQ(d.kind, bottleneck::gpu_bound) << d.sentence << "\n" << s.to_string();
}

TEST(diagnosis_test, OneSlotRingWithIdleWorkersIsRingTooShallow) {
  // One slot: workers can fill the next batch only once the consumer has released the last,
  // so next() waits for a whole batch (4 parallel 1 ms reads) every time, while workers sit
  // idle through each 10 ms step. With 4 slots the same workload does not stall.
  auto data = std::make_shared<gpufeed::test::sleepy_dataset>(
      100'000, [](std::size_t) { return std::chrono::microseconds{1000}; });
  {
    gpufeed::loader loader{data, {.batch_size = 4, .workers = 4, .prefetch_depth = 1}};
    auto const s = run(loader, 30, 10ms);
    auto const d = diagnose(s);
    EXPECT_EQ(d.kind, bottleneck::ring_too_shallow) << d.sentence << "\n" << s.to_string();
    EXPECT_TRUE(says(d.sentence, {"raise prefetch_depth (now 1)"}));
  }
  {
    gpufeed::loader loader{data, {.batch_size = 4, .workers = 4, .prefetch_depth = 4}};
    auto const s = run(loader, 30, 10ms);
    auto const d = diagnose(s);
    EXPECT_EQ(d.kind, bottleneck::gpu_bound) << d.sentence << "\n" << s.to_string();
  }
}

}  // namespace
