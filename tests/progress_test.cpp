// progress_line: the formatting functions (exact strings), the terminal and plain-log modes, and
// the rate limit, on an injected clock (no sleeps).

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): posix_openpt is POSIX, not <cstdlib>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpufeed/datasets/synthetic.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/log.hpp"
#include "gpufeed/observe/monitor.hpp"
#include "gpufeed/observe/progress.hpp"
#include "gpufeed/stats.hpp"
#include "support/log_capture.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::test::log_capture;
using namespace std::chrono_literals;
using gpufeed::progress_line;
using gpufeed::progress_options;
using gpufeed::progress_position;
using gpufeed::progress_values;
using gpufeed::stats;
using clock_type = std::chrono::steady_clock;

constexpr std::uint64_t gib = 1ULL << 30;

// A clock the test moves by hand, and a terminal that records what is written to it.
struct fake_terminal {
  clock_type::time_point now{std::chrono::hours{1}};
  std::vector<std::string> writes;

  progress_options options(bool tty) {
    progress_options o;
    o.tty = tty;
    o.write = [this](std::string_view text) { writes.emplace_back(text); };
    o.clock = [this] { return now; };
    return o;
  }
};

stats snapshot_at(double wall_s, std::uint64_t samples, double waited_s,
                  std::uint64_t skipped = 0) {
  stats s;
  s.wall_s = wall_s;
  s.samples = samples;
  s.consumer_wait_s = waited_s;
  s.skipped = skipped;
  return s;
}

progress_values full_values() {
  progress_values v;
  v.position = progress_position{.epoch = 2, .batch = 150, .batches_per_epoch = 1563};
  v.samples_per_s = 20480.4;
  v.stall_fraction = 0.004;
  v.gpu_percent = 87.0;
  v.gpu_memory_used = 12 * gib + 3 * gib / 10;
  v.gpu_memory_total = 80 * gib;
  v.cpu_percent = 312.0;
  v.ram_used = 23 * gib + gib / 10;
  v.ram_total = 62 * gib + 8 * gib / 10;
  return v;
}

// ---------------------------------------------------------------------------------------------
// Formatting

TEST(progress_test, FormatsBytesInBinaryUnits) {
  EXPECT_EQ(gpufeed::format_bytes(0), "0 B");
  EXPECT_EQ(gpufeed::format_bytes(1023), "1023 B");
  EXPECT_EQ(gpufeed::format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(gpufeed::format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(gpufeed::format_bytes(12ULL * 1024 * 1024 + 300ULL * 1024), "12.3 MiB");
  EXPECT_EQ(gpufeed::format_bytes(80 * gib), "80.0 GiB");
  EXPECT_EQ(gpufeed::format_bytes(1536 * gib), "1.5 TiB");
}

TEST(progress_test, FormatsMemoryInTheTotalsUnit) {
  EXPECT_EQ(gpufeed::format_memory(12 * gib + 3 * gib / 10, 80 * gib), "12.3/80.0 GiB");
  EXPECT_EQ(gpufeed::format_memory(512ULL << 20, 80 * gib), "0.5/80.0 GiB");
  EXPECT_EQ(gpufeed::format_memory(100, 1000), "100/1000 B");
  EXPECT_EQ(gpufeed::format_memory(2 * gib, std::nullopt), "2.0 GiB");
  EXPECT_EQ(gpufeed::format_memory(std::nullopt, 80 * gib), "n/a");
  EXPECT_EQ(gpufeed::format_memory(std::nullopt, std::nullopt), "n/a");
}

TEST(progress_test, FormatsPercentWithADecimalBelowTen) {
  EXPECT_EQ(gpufeed::format_percent(87.4), "87%");
  EXPECT_EQ(gpufeed::format_percent(312.0), "312%");
  EXPECT_EQ(gpufeed::format_percent(0.42), "0.4%");
  EXPECT_EQ(gpufeed::format_percent(0.0), "0.0%");
  EXPECT_EQ(gpufeed::format_percent(std::nullopt), "n/a");
}

TEST(progress_test, FormatsEveryField) {
  EXPECT_EQ(gpufeed::format_progress(full_values()),
            "epoch 2 batch 150/1563 | 20480 samples/s | stall 0.4% | GPU 87% | "
            "VRAM 12.3/80.0 GiB | CPU 312% | RAM 23.1/62.8 GiB");
}

TEST(progress_test, FormatsAbsentFieldsAsNotAvailable) {
  progress_values v;
  v.samples_per_s = 12.34;
  v.stall_fraction = 0.5;
  EXPECT_EQ(gpufeed::format_progress(v),
            "epoch - batch - | 12.3 samples/s | stall 50% | GPU n/a | VRAM n/a | CPU n/a | "
            "RAM n/a");
  // No GPU, the rest known; an unknown epoch length.
  auto w = full_values();
  w.gpu_percent.reset();
  w.gpu_memory_used.reset();
  w.gpu_memory_total.reset();
  w.position->batches_per_epoch = 0;
  EXPECT_EQ(gpufeed::format_progress(w),
            "epoch 2 batch 150 | 20480 samples/s | stall 0.4% | GPU n/a | VRAM n/a | CPU 312% | "
            "RAM 23.1/62.8 GiB");
}

TEST(progress_test, ValuesAreSinceThePreviousSnapshot) {
  auto const earlier = snapshot_at(10.0, 1000, 1.0);
  auto const now = snapshot_at(20.0, 3000, 2.0);
  auto const recent = gpufeed::progress_values_of(now, &earlier, std::nullopt, std::nullopt);
  EXPECT_DOUBLE_EQ(recent.samples_per_s, 200.0);
  EXPECT_DOUBLE_EQ(recent.stall_fraction, 0.1);
  EXPECT_FALSE(recent.gpu_percent.has_value());
  EXPECT_FALSE(recent.position.has_value());

  auto const overall = gpufeed::progress_values_of(now, nullptr, std::nullopt, std::nullopt);
  EXPECT_DOUBLE_EQ(overall.samples_per_s, 150.0);
  EXPECT_DOUBLE_EQ(overall.stall_fraction, 0.1);
  // A "previous" from another loader (later than now) is ignored.
  auto const later = snapshot_at(30.0, 5000, 1.0);
  EXPECT_DOUBLE_EQ(
      gpufeed::progress_values_of(now, &later, std::nullopt, std::nullopt).samples_per_s, 150.0);
  // Nothing measured yet.
  auto const empty = gpufeed::progress_values_of(stats{}, nullptr, std::nullopt, std::nullopt);
  EXPECT_EQ(empty.samples_per_s, 0.0);
  EXPECT_EQ(empty.stall_fraction, 0.0);
}

TEST(progress_test, ValuesTakeTheMonitorsFields) {
  gpufeed::monitor_sample sample;
  sample.gpu_percent = 55.0;
  sample.gpu_memory_used = 3 * gib;
  sample.gpu_memory_total = 16 * gib;
  sample.process_cpu_percent = 180.0;
  sample.ram_used = 5 * gib;
  sample.ram_total = 32 * gib;
  progress_position const at{.epoch = 1, .batch = 7, .batches_per_epoch = 10};
  auto const v = gpufeed::progress_values_of(snapshot_at(4.0, 400, 0.0), nullptr, sample, at);
  EXPECT_EQ(gpufeed::format_progress(v),
            "epoch 1 batch 7/10 | 100 samples/s | stall 0.0% | GPU 55% | VRAM 3.0/16.0 GiB | "
            "CPU 180% | RAM 5.0/32.0 GiB");
}

TEST(progress_test, FormatsTheEpochSummary) {
  auto const start = snapshot_at(10.0, 1000, 0.5, 1);
  auto const end = snapshot_at(22.5, 51000, 0.55, 4);
  auto const summary = gpufeed::epoch_summary_of(3, end, start);
  EXPECT_EQ(summary.samples, 50000U);
  EXPECT_DOUBLE_EQ(summary.seconds, 12.5);
  EXPECT_EQ(summary.skipped, 3U);
  EXPECT_EQ(gpufeed::format_epoch_summary(summary),
            "epoch 3: 50000 samples in 12.5 s (4000 samples/s), stall 0.4%, skipped 3");
  // From the loader's start.
  EXPECT_EQ(gpufeed::format_epoch_summary(gpufeed::epoch_summary_of(0, start, stats{})),
            "epoch 0: 1000 samples in 10.0 s (100 samples/s), stall 5.0%, skipped 1");
}

// ---------------------------------------------------------------------------------------------
// The driver

TEST(progress_test, RedrawsInPlaceOnATerminalAtMostEveryInterval) {
  fake_terminal terminal;
  log_capture const log;
  {
    progress_line progress{terminal.options(true)};
    ASSERT_TRUE(progress.tty());
    EXPECT_FALSE(progress.update(snapshot_at(1.0, 100, 0.0)));  // no interval has passed yet
    terminal.now += 499ms;
    EXPECT_FALSE(progress.update(snapshot_at(1.5, 150, 0.0)));
    EXPECT_TRUE(terminal.writes.empty());

    terminal.now += 1ms;
    EXPECT_TRUE(progress.update(snapshot_at(2.0, 200, 0.0)));
    ASSERT_EQ(terminal.writes.size(), 1U);
    EXPECT_EQ(terminal.writes[0], "\r" + progress.last_line() + "\x1b[K");
    EXPECT_EQ(progress.last_line(),
              "epoch - batch - | 100 samples/s | stall 0.0% | GPU n/a | VRAM n/a | CPU n/a | "
              "RAM n/a");

    terminal.now += 200ms;
    EXPECT_FALSE(progress.update(snapshot_at(2.2, 220, 0.0)));
    terminal.now += 300ms;
    // Throughput since the previous line: 100 samples in 1 s.
    EXPECT_TRUE(progress.update(snapshot_at(3.0, 300, 0.5)));
    ASSERT_EQ(terminal.writes.size(), 2U);
    EXPECT_NE(terminal.writes[1].find("100 samples/s | stall 50%"), std::string::npos);
    EXPECT_TRUE(log.lines().empty());  // redraws do not go through the log

    // The summary clears the line, then goes through the log.
    auto const summary = progress.end_epoch(snapshot_at(4.0, 400, 0.6), 0);
    ASSERT_EQ(terminal.writes.size(), 3U);
    EXPECT_EQ(terminal.writes[2], "\r\x1b[K");
    EXPECT_EQ(summary, "epoch 0: 400 samples in 4.0 s (100 samples/s), stall 15%, skipped 0");
    EXPECT_EQ(log.lines(), std::vector<std::string>{summary});

    terminal.now += 500ms;
    EXPECT_TRUE(progress.update(snapshot_at(5.0, 500, 0.5)));
    ASSERT_EQ(terminal.writes.size(), 4U);
  }
  // Destruction ends the drawn line.
  ASSERT_EQ(terminal.writes.size(), 5U);
  EXPECT_EQ(terminal.writes[4], "\n");
}

TEST(progress_test, LogsPlainLinesElsewhereAtMostEveryInterval) {
  fake_terminal terminal;
  log_capture const log;
  {
    progress_line progress{terminal.options(false)};
    ASSERT_FALSE(progress.tty());
    terminal.now += 10s;
    EXPECT_FALSE(progress.update(snapshot_at(10.0, 1000, 0.0)));
    terminal.now += 20s;
    EXPECT_TRUE(progress.update(snapshot_at(30.0, 3000, 0.0)));
    terminal.now += 29s;
    EXPECT_FALSE(progress.update(snapshot_at(59.0, 5900, 0.0)));
    terminal.now += 1s;
    EXPECT_TRUE(progress.update(snapshot_at(60.0, 9000, 3.0)));
    (void)progress.end_epoch(snapshot_at(61.0, 9100, 3.0, 2), 0);
    (void)progress.end_epoch(snapshot_at(71.0, 10100, 3.0, 2), 1);
  }
  EXPECT_TRUE(terminal.writes.empty());  // nothing written in place, not even at destruction
  EXPECT_EQ(log.lines(),
            (std::vector<std::string>{
                "epoch - batch - | 100 samples/s | stall 0.0% | GPU n/a | VRAM n/a | CPU n/a | "
                "RAM n/a",
                "epoch - batch - | 200 samples/s | stall 10% | GPU n/a | VRAM n/a | CPU n/a | "
                "RAM n/a",
                "epoch 0: 9100 samples in 61.0 s (149 samples/s), stall 4.9%, skipped 2",
                "epoch 1: 1000 samples in 10.0 s (100 samples/s), stall 0.0%, skipped 0"}));
}

TEST(progress_test, DetectsATerminalFromTheDescriptor) {
  int fds[2] = {-1, -1};
  ASSERT_EQ(::pipe(fds), 0);
  {
    progress_line const on_pipe{progress_options{.fd = fds[1]}};
    EXPECT_FALSE(on_pipe.tty());  // a pipe is not a terminal: plain lines
    progress_line const forced{progress_options{.fd = fds[1], .tty = true}};
    EXPECT_TRUE(forced.tty());
  }
  ::close(fds[0]);
  ::close(fds[1]);
  // A pseudo-terminal is a terminal: redrawn in place.
  int const master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0) GTEST_SKIP() << "no pseudo-terminal here (posix_openpt failed)";
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  int const terminal = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(terminal, 0);
  {
    progress_line const on_terminal{progress_options{.fd = terminal}};
    EXPECT_TRUE(on_terminal.tty());
  }
  ::close(terminal);
  ::close(master);
}

TEST(progress_test, UpdatesFromALoaderWithItsPosition) {
  gpufeed::sample_spec spec;
  spec.add("x", gpufeed::dtype::f32, {});
  auto data = std::make_shared<gpufeed::synthetic>(100, spec);
  gpufeed::loader_options options;
  options.batch_size = 10;
  options.workers = 2;
  options.prefetch_depth = 2;
  options.rank = 0;
  options.world_size = 1;
  gpufeed::loader loader{data, options};

  fake_terminal terminal;
  progress_line progress{terminal.options(true)};
  for (int i = 0; i < 3; ++i) {
    auto batch = loader.next();
    ASSERT_TRUE(batch.has_value());
  }
  EXPECT_FALSE(progress.update(loader));
  terminal.now += 1s;
  ASSERT_TRUE(progress.update(loader, nullptr));
  EXPECT_TRUE(progress.last_line().starts_with("epoch 0 batch 3/10 | ")) << progress.last_line();
  EXPECT_NE(progress.last_line().find("| GPU n/a |"), std::string::npos);
  EXPECT_NE(progress.last_line().find("| RAM n/a"), std::string::npos);  // no monitor given

  // With a monitor, its latest sample fills the machine's fields.
  gpufeed::system_monitor monitor{{.interval = 10ms}};
  ASSERT_TRUE(gpufeed::test::eventually([&] { return monitor.latest().has_value(); }));
  ASSERT_TRUE(loader.next().has_value());
  terminal.now += 1s;
  ASSERT_TRUE(progress.update(loader, &monitor));
  EXPECT_TRUE(progress.last_line().starts_with("epoch 0 batch 4/10 | ")) << progress.last_line();
  EXPECT_EQ(progress.last_line().find("| RAM n/a"), std::string::npos) << progress.last_line();
  EXPECT_EQ(progress.last_line().find("| CPU n/a"), std::string::npos) << progress.last_line();
}

}  // namespace
