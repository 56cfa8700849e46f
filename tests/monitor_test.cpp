// system_monitor: the low-utilization window on made-up times, and the monitor's thread on this
// machine (GPU fields only where NVML sees a GPU).

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gpufeed/error.hpp"
#include "gpufeed/log.hpp"
#include "gpufeed/observe/detail/utilization_window.hpp"
#include "gpufeed/observe/monitor.hpp"
#include "gpufeed/observe/process.hpp"
#include "support/log_capture.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::observe::thread_cpu_seconds;
using gpufeed::test::eventually;
using gpufeed::test::log_capture;
using namespace std::chrono_literals;
using gpufeed::monitor_options;
using gpufeed::monitor_sample;
using gpufeed::system_monitor;
namespace detail = gpufeed::detail;
namespace observe = gpufeed::observe;

// ---------------------------------------------------------------------------------------------
// Helpers

// Everything gpufeed logs in this process, from before the first test: NVML's absence is said
// once per process, so only a capture that saw every test can count it exactly, whatever the
// order (or the subset) the tests run in.
class process_log final : public ::testing::Environment {
 public:
  void SetUp() override { capture_ = std::make_unique<log_capture>(); }
  void TearDown() override { capture_.reset(); }
  [[nodiscard]] static std::size_t count(std::string const& text) {
    return instance->capture_ ? instance->capture_->count(text) : 0;
  }
  static process_log* const instance;

 private:
  std::unique_ptr<log_capture> capture_;
};
process_log* const process_log::instance = [] {
  auto* const environment = new process_log;  // owned by GoogleTest from here on
  ::testing::AddGlobalTestEnvironment(environment);
  return environment;
}();

// ---------------------------------------------------------------------------------------------
// The low-utilization window

TEST(utilization_window_test, WarnsOncePerLowWindow) {
  detail::utilization_window window{30.0, 30.0};
  std::vector<double> warned_at;
  for (int t = 0; t <= 90; ++t) {
    if (auto const low = window.add(t, 10.0)) {
      warned_at.push_back(t);
      EXPECT_DOUBLE_EQ(low->mean_percent, 10.0);
      EXPECT_DOUBLE_EQ(low->span_s, 30.0);
      EXPECT_EQ(low->readings, 31U);
    }
  }
  // Windows [0, 30], [31, 61], then [62, 92] is not closed yet.
  EXPECT_EQ(warned_at, (std::vector<double>{30, 61}));
}

TEST(utilization_window_test, MeanAtOrAboveThresholdSaysNothing) {
  detail::utilization_window exact{2.0, 30.0};
  EXPECT_FALSE(exact.add(0, 20.0));
  EXPECT_FALSE(exact.add(1, 40.0));
  EXPECT_FALSE(exact.add(2, 30.0));  // closes [0, 2] with a mean of 30: at the threshold
  EXPECT_FALSE(exact.add(3, 29.0));
  EXPECT_FALSE(exact.add(4, 29.0));
  auto const low = exact.add(5, 29.0);  // closes [3, 5] with a mean of 29
  ASSERT_TRUE(low.has_value());
  EXPECT_DOUBLE_EQ(low->mean_percent, 29.0);
  detail::utilization_window high{5.0, 30.0};
  for (int t = 0; t <= 60; ++t) EXPECT_FALSE(high.add(t, 95.0)) << t;
}

TEST(utilization_window_test, UnknownReadingsAreNotCounted) {
  detail::utilization_window window{4.0, 30.0};
  EXPECT_FALSE(window.add(0, std::nullopt));
  EXPECT_FALSE(window.add(1, 10.0));
  EXPECT_FALSE(window.add(2, std::nullopt));
  EXPECT_FALSE(window.add(3, 20.0));
  auto const low = window.add(4, std::nullopt);
  ASSERT_TRUE(low.has_value());
  EXPECT_DOUBLE_EQ(low->mean_percent, 15.0);
  EXPECT_EQ(low->readings, 2U);
  // A window with no value at all says nothing.
  for (int t = 5; t <= 20; ++t) EXPECT_FALSE(window.add(t, std::nullopt)) << t;
}

TEST(utilization_window_test, ZeroWindowTurnsTheCheckOff) {
  detail::utilization_window window{0.0, 30.0};
  for (int t = 0; t <= 100; ++t) EXPECT_FALSE(window.add(t, 0.0)) << t;
}

// ---------------------------------------------------------------------------------------------
// to_json

TEST(monitor_test, ToJsonWritesEveryFieldOnOneLine) {
  monitor_sample sample;
  sample.time = std::chrono::system_clock::time_point{std::chrono::seconds{1700000000}} + 250ms;
  sample.elapsed_s = 2.5;
  sample.gpu_index = 1;
  sample.gpu_percent = 87.0;
  sample.gpu_memory_used = 12ULL << 30;
  sample.gpu_memory_total = 80ULL << 30;
  sample.process_cpu_percent = 312.25;
  sample.process_cpu_percent_of_cpus = 19.5;
  sample.cpus = 16;
  sample.system_cpu_percent = 40.0;
  sample.process_rss = 2147483648ULL;
  sample.ram_used = 1000;
  sample.ram_total = 4000;
  sample.monitor_cpu_s = 0.000042;
  EXPECT_EQ(gpufeed::to_json(sample),
            "{\"time_unix_s\":1700000000.250,\"elapsed_s\":2.500,\"gpu_index\":1,"
            "\"gpu_percent\":87.0,\"gpu_memory_used_bytes\":12884901888,"
            "\"gpu_memory_total_bytes\":85899345920,\"process_cpu_percent\":312.2,"
            "\"process_cpu_percent_of_cpus\":19.5,\"cpus\":16,\"system_cpu_percent\":40.0,"
            "\"process_rss_bytes\":2147483648,\"ram_used_bytes\":1000,\"ram_total_bytes\":4000,"
            "\"monitor_cpu_s\":0.000042}");
}

TEST(monitor_test, ToJsonWritesNullForUnknownValues) {
  monitor_sample sample;
  sample.system_cpu_percent = std::nan("");
  auto const json = gpufeed::to_json(sample);
  EXPECT_EQ(json,
            "{\"time_unix_s\":0.000,\"elapsed_s\":0.000,\"gpu_index\":null,\"gpu_percent\":null,"
            "\"gpu_memory_used_bytes\":null,\"gpu_memory_total_bytes\":null,"
            "\"process_cpu_percent\":null,\"process_cpu_percent_of_cpus\":null,\"cpus\":0,"
            "\"system_cpu_percent\":null,\"process_rss_bytes\":null,\"ram_used_bytes\":null,"
            "\"ram_total_bytes\":null,\"monitor_cpu_s\":0.000000}");
  EXPECT_EQ(json.find('\n'), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// The monitor's thread

TEST(monitor_test, RejectsZeroIntervalAndZeroHistory) {
  EXPECT_THROW(system_monitor{monitor_options{.interval = 0ms}}, gpufeed::logic_error);
  EXPECT_THROW(system_monitor{monitor_options{.history = 0}}, gpufeed::logic_error);
}

TEST(monitor_test, SamplesThisMachine) {
  // A quarter second: long enough for the 10 ms tick of /proc's CPU times to be a small error.
  system_monitor monitor{{.interval = 250ms}};
  system_monitor second{{.interval = 250ms}};
  // Where NVML sees a GPU, the GPU-absent checks are skipped; the CPU and memory ones still run.
  bool const gpu = monitor.gpu_available();
  if (gpu) {
    EXPECT_TRUE(monitor.gpu_index().has_value());
    EXPECT_EQ(monitor.gpu_unavailable_reason(), "");
  } else {
    EXPECT_NE(monitor.gpu_unavailable_reason().find("NVML"), std::string::npos);
    EXPECT_FALSE(monitor.gpu_index().has_value());
    EXPECT_FALSE(second.gpu_available());
    EXPECT_EQ(second.gpu_unavailable_reason(), monitor.gpu_unavailable_reason());
    // NVML's absence is logged exactly once per process, whatever the number of monitors (at
    // level info: under a stricter GPUFEED_LOG_LEVEL nothing is said).
    if (gpufeed::logger()->should_log(spdlog::level::info)) {
      EXPECT_EQ(process_log::count("NVML unavailable"), 1U);
    }
  }

  ASSERT_TRUE(eventually([&] { return monitor.samples_taken() >= 2; }));
  monitor.stop();
  second.stop();
  auto const sample = monitor.latest();
  ASSERT_TRUE(sample.has_value());
  EXPECT_EQ(sample->gpu_index, monitor.gpu_index());
  if (!gpu) {
    EXPECT_FALSE(sample->gpu_percent.has_value());
    EXPECT_FALSE(sample->gpu_memory_used.has_value());
    EXPECT_FALSE(sample->gpu_memory_total.has_value());
  }

  EXPECT_EQ(sample->cpus, observe::usable_cpus());
  ASSERT_TRUE(sample->process_cpu_percent.has_value());
  ASSERT_TRUE(sample->process_cpu_percent_of_cpus.has_value());
  ASSERT_TRUE(sample->system_cpu_percent.has_value());
  // The process cannot use more than its CPUs (a clock-tick or unit mix-up would exceed it).
  double const tick_slack = 10.0;  // one 10 ms tick over 250 ms is 4 %
  EXPECT_LE(*sample->process_cpu_percent, 100.0 * sample->cpus + tick_slack);

  ASSERT_TRUE(sample->process_rss.has_value());
  EXPECT_GT(*sample->process_rss, 0U);
  ASSERT_TRUE(sample->ram_total.has_value());
  ASSERT_TRUE(sample->ram_used.has_value());
  // MemTotal is at most the physical memory the kernel reports through sysinfo (equal outside a
  // container that rewrites /proc/meminfo): a kB / byte mix-up would be 1024 times too large.
  auto const physical = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                        static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  EXPECT_LE(*sample->ram_total, physical);
  EXPECT_GT(*sample->ram_total, physical / 1024);
  EXPECT_LE(*sample->ram_used, *sample->ram_total);
  EXPECT_LE(*sample->process_rss, *sample->ram_total);
  EXPECT_GT(sample->elapsed_s, 0.0);

  // Its own cost is measured, and is not absurd (a sanity bound, not a timing claim).
  EXPECT_GT(sample->monitor_cpu_s, 0.0);
  EXPECT_GT(monitor.cost_per_sample_s(), 0.0);
  EXPECT_LT(monitor.cost_per_sample_s(), 1.0);
  if (!gpu) {
    EXPECT_NE(gpufeed::to_json(*sample).find("\"gpu_percent\":null"), std::string::npos);
  }
}

TEST(monitor_test, ProcessRssFollowsTouchedMemory) {
  system_monitor monitor{{.interval = 20ms}};
  ASSERT_TRUE(eventually([&] { return monitor.samples_taken() >= 1; }));
  auto const before = monitor.latest();
  ASSERT_TRUE(before.has_value() && before->process_rss.has_value());
  std::vector<char> touched(64U << 20, 1);  // every page written: resident
  auto const taken = monitor.samples_taken();
  // A sample that started after the touch: the one after the next.
  ASSERT_TRUE(eventually([&] { return monitor.samples_taken() >= taken + 2; }));
  auto const after = monitor.latest();
  ASSERT_TRUE(after.has_value() && after->process_rss.has_value());
  EXPECT_GE(*after->process_rss, *before->process_rss + (48U << 20))
      << "touched " << touched.size() << " bytes";
}

TEST(monitor_test, HistoryIsBoundedOldestFirst) {
  system_monitor monitor{{.interval = 5ms, .history = 3}};
  ASSERT_TRUE(eventually([&] { return monitor.samples_taken() >= 7; }));
  monitor.stop();
  auto const history = monitor.history();
  ASSERT_EQ(history.size(), 3U);
  EXPECT_GE(monitor.samples_taken(), 7U);
  EXPECT_LT(history[0].elapsed_s, history[1].elapsed_s);
  EXPECT_LT(history[1].elapsed_s, history[2].elapsed_s);
  ASSERT_TRUE(monitor.latest().has_value());
  EXPECT_EQ(monitor.latest()->elapsed_s, history.back().elapsed_s);
}

TEST(monitor_test, HistoryBeforeItFillsHoldsEverySample) {
  system_monitor monitor{{.interval = 5ms, .history = 1000}};
  ASSERT_TRUE(eventually([&] { return monitor.samples_taken() >= 4; }));
  monitor.stop();
  auto const history = monitor.history();
  EXPECT_EQ(history.size(), monitor.samples_taken());
  for (std::size_t i = 1; i < history.size(); ++i) {
    EXPECT_LT(history[i - 1].elapsed_s, history[i].elapsed_s) << i;
  }
}

TEST(monitor_test, CallbackSeesEverySampleAndItsExceptionsAreContained) {
  std::atomic<std::uint64_t> seen{0};
  log_capture const log;
  {
    system_monitor monitor{{.interval = 5ms, .on_sample = [&](monitor_sample const&) {
                              ++seen;
                              throw std::runtime_error{"callback failed"};
                            }}};
    ASSERT_TRUE(eventually([&] { return monitor.samples_taken() >= 3; }));
    monitor.stop();
    EXPECT_EQ(seen.load(), monitor.samples_taken());
  }
  EXPECT_EQ(log.count("on_sample threw: callback failed"), 1U);  // once, not per sample
}

TEST(monitor_test, StopsPromptlyWithALongInterval) {
  auto const start = std::chrono::steady_clock::now();
  {
    system_monitor monitor{{.interval = std::chrono::hours{1}}};
    EXPECT_FALSE(monitor.latest().has_value());
  }
  // A hang check: the destructor must not wait for the interval.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(monitor_test, StopIsIdempotentAndSafeFromManyThreads) {
  system_monitor monitor{{.interval = 1ms, .history = 8}};
  std::atomic<bool> done{false};
  std::vector<std::thread> readers;
  readers.reserve(3);
  for (int i = 0; i < 3; ++i) {
    readers.emplace_back([&] {
      while (!done) {
        (void)monitor.latest();
        (void)monitor.history();
        (void)monitor.cost_per_sample_s();
      }
    });
  }
  ASSERT_TRUE(eventually([&] { return monitor.samples_taken() >= 10; }));
  std::thread stopper{[&] { monitor.stop(); }};
  monitor.stop();
  stopper.join();
  auto const taken = monitor.samples_taken();
  done = true;
  for (auto& reader : readers) reader.join();
  EXPECT_EQ(monitor.samples_taken(), taken);  // nothing sampled after stop
  EXPECT_LE(monitor.history().size(), 8U);
}

TEST(monitor_test, BusyThreadRaisesProcessCpu) {
  system_monitor monitor{{.interval = 100ms}};
  std::thread spinner{[] {
    // Burn a fixed amount of CPU time (not wall time), however busy the machine is.
    double const until = thread_cpu_seconds() + 0.8;
    volatile std::uint64_t sink = 0;
    while (thread_cpu_seconds() < until) sink = sink + 1;
  }};
  spinner.join();
  monitor.stop();
  auto const history = monitor.history();
  ASSERT_FALSE(history.empty());
  double highest = 0;
  for (auto const& sample : history) {
    if (sample.process_cpu_percent) highest = std::max(highest, *sample.process_cpu_percent);
  }
  // 0.8 s of CPU time over samples 0.1 s apart: a sample during the spin sees most of a core;
  // 10 % leaves room for a machine shared with other jobs.
  EXPECT_GT(highest, 10.0);
}

TEST(monitor_test, LowUtilizationIsReportedOncePerWindowOnAGpu) {
  std::atomic<int> low_windows{0};
  std::atomic<bool> bad_event{false};
  log_capture const log;
  {
    // An idle GPU (nothing runs on it here) is under any threshold of 101 %.
    system_monitor monitor{{.interval = 20ms,
                            .low_utilization_window = 100ms,
                            .low_utilization_percent = 101,
                            .on_low_utilization = [&](gpufeed::low_utilization const& low) {
                              if (low.mean_percent > 100 || low.samples == 0 ||
                                  low.window_s < 0.1) {
                                bad_event = true;
                              }
                              ++low_windows;
                            }}};
    if (!monitor.gpu_available()) GTEST_SKIP() << monitor.gpu_unavailable_reason();
    ASSERT_TRUE(eventually([&] { return low_windows >= 2; }));
    monitor.stop();
    // One event per window, and a window spans 100 ms, so it holds at least two samples.
    EXPECT_LE(static_cast<std::uint64_t>(low_windows.load()), monitor.samples_taken() / 2);
    auto const sample = monitor.latest();
    ASSERT_TRUE(sample.has_value());
    EXPECT_TRUE(sample->gpu_percent.has_value());
    EXPECT_TRUE(sample->gpu_memory_total.has_value());
  }
  EXPECT_FALSE(bad_event.load());
  EXPECT_EQ(log.count("utilization averaged"), static_cast<std::size_t>(low_windows.load()));
  EXPECT_GE(log.count("the loader's diagnosis"), 1U);
}

}  // namespace
