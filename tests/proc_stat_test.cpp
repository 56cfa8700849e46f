// gpufeed::observe's /proc readers: the parsers on fixture text, and the process readers on this
// process.

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include "gpufeed/observe/proc_stat.hpp"
#include "gpufeed/observe/process.hpp"

namespace {

using gpufeed::observe::thread_cpu_seconds;
using namespace std::chrono_literals;
namespace observe = gpufeed::observe;

// ---------------------------------------------------------------------------------------------
// /proc parsers

TEST(proc_stat_test, ProcessStatCountsFieldsFromTheLastParenthesis) {
  // A command name with spaces and parentheses, as a thread may name itself.
  auto const text =
      "4242 (my (odd) ) prog) S 1 4242 4242 0 -1 4194560 21877 0 12 0 250 75 3 4 20 0 9 0 "
      "123456 912345678 24567 18446744073709551615 1 1 0 0 0 0 0 4096 17642 0 0 0 17 1 0 0 0 0 "
      "0\n";
  auto const ticks = observe::parse_process_stat(text);
  ASSERT_TRUE(ticks.has_value());
  EXPECT_EQ(ticks->user, 250U);
  EXPECT_EQ(ticks->system, 75U);
  EXPECT_EQ(ticks->total(), 325U);
}

TEST(proc_stat_test, ProcessStatRejectsTruncatedOrGarbledText) {
  EXPECT_FALSE(observe::parse_process_stat("").has_value());
  EXPECT_FALSE(observe::parse_process_stat("4242 (prog S 1 2 3").has_value());  // no ')'
  EXPECT_FALSE(observe::parse_process_stat("4242 (prog) S 1 4242 4242 0 -1 4194560 21877 0 12 0")
                   .has_value());  // stops before utime
  EXPECT_FALSE(
      observe::parse_process_stat("4242 (prog) S 1 4242 4242 0 -1 4194560 21877 0 12 0 2x5 75 0")
          .has_value());
}

TEST(proc_stat_test, SystemStatSumsTheAggregateLine) {
  auto const text =
      "cpu  10132153 290696 3084719 46828483 16683 0 25195 7 175628 0\n"
      "cpu0 1393280 32966 572056 13343292 6130 0 17875 0 23933 0\n"
      "cpu1 1335999 29786 582113 13361000 3120 0 2001 0 20000 0\n"
      "intr 1462898 0 0 0 0 0 0 0 0 1 0 0 0 0 0 0 0 0\n"
      "ctxt 2578943\n";
  auto const ticks = observe::parse_system_stat(text);
  ASSERT_TRUE(ticks.has_value());
  // user + nice + system + irq + softirq + steal; guest is already inside user.
  EXPECT_EQ(ticks->busy, 10132153U + 290696U + 3084719U + 0U + 25195U + 7U);
  EXPECT_EQ(ticks->idle, 46828483U + 16683U);
}

TEST(proc_stat_test, SystemStatAcceptsOldKernelsAndRejectsOthers) {
  auto const old = observe::parse_system_stat("cpu  100 2 30 400\ncpu0 100 2 30 400\n");
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->busy, 132U);
  EXPECT_EQ(old->idle, 400U);
  EXPECT_FALSE(observe::parse_system_stat("cpu0 100 2 30 400\n").has_value());  // no aggregate
  EXPECT_FALSE(observe::parse_system_stat("cpu  100 2 30\n").has_value());      // too short
  EXPECT_FALSE(observe::parse_system_stat("cpu  100 two 30 400\n").has_value());
  EXPECT_FALSE(observe::parse_system_stat("").has_value());
}

TEST(proc_stat_test, SystemCpuPercentIsBusyOverAllTicks) {
  observe::system_cpu_ticks const before{.busy = 1000, .idle = 3000};
  observe::system_cpu_ticks const after{.busy = 1300, .idle = 3100};
  auto const percent = observe::system_cpu_percent(before, after);
  ASSERT_TRUE(percent.has_value());
  EXPECT_DOUBLE_EQ(*percent, 75.0);
  EXPECT_FALSE(observe::system_cpu_percent(before, before).has_value());  // no time passed
  EXPECT_FALSE(observe::system_cpu_percent(after, before).has_value());   // went backwards
}

TEST(proc_stat_test, CpuPercentIsOfOneCore) {
  EXPECT_DOUBLE_EQ(observe::cpu_percent(150, 1.0, 100), 150.0);
  EXPECT_DOUBLE_EQ(observe::cpu_percent(25, 0.5, 100), 50.0);
  EXPECT_DOUBLE_EQ(observe::cpu_percent(25, 0.0, 100), 0.0);
  EXPECT_DOUBLE_EQ(observe::cpu_percent(25, 1.0, 0), 0.0);
}

TEST(proc_stat_test, StatmResidentPagesIsTheSecondField) {
  EXPECT_EQ(observe::parse_statm_resident_pages("5432 1234 567 12 0 890 0\n"), 1234U);
  EXPECT_FALSE(observe::parse_statm_resident_pages("5432\n").has_value());
  EXPECT_FALSE(observe::parse_statm_resident_pages("").has_value());
}

TEST(proc_stat_test, StatusRssIsInKibibytes) {
  auto const text =
      "Name:\tgpufeed-test\nUmask:\t0022\nState:\tS (sleeping)\nVmPeak:\t  912344 kB\n"
      "VmSize:\t  912344 kB\nVmHWM:\t   40000 kB\nVmRSS:\t    8192 kB\nRssAnon:\t    4096 kB\n"
      "Threads:\t3\n";
  EXPECT_EQ(observe::parse_status_rss_bytes(text), 8192U * 1024U);
  // Kernel threads have no VmRSS line.
  EXPECT_FALSE(
      observe::parse_status_rss_bytes("Name:\tkthreadd\nState:\tS (sleeping)\nThreads:\t1\n")
          .has_value());
  // RssAnon must not be mistaken for VmRSS, nor VmRSSX for it.
  EXPECT_FALSE(observe::parse_status_rss_bytes("RssAnon:\t 4096 kB\nVmRSSX:\t 1 kB\n").has_value());
}

TEST(proc_stat_test, MeminfoUsedIsTotalMinusAvailable) {
  auto const text =
      "MemTotal:       65843688 kB\nMemFree:         1234567 kB\nMemAvailable:   40000000 kB\n"
      "Buffers:          456789 kB\nCached:         30000000 kB\nSwapCached:            0 kB\n"
      "HugePages_Total:       0\n";
  auto const memory = observe::parse_meminfo(text);
  ASSERT_TRUE(memory.has_value());
  EXPECT_EQ(memory->total, 65843688ULL * 1024);
  EXPECT_EQ(memory->available, 40000000ULL * 1024);
  EXPECT_EQ(memory->used(), (65843688ULL - 40000000ULL) * 1024);
  EXPECT_EQ(observe::parse_kb_field(text, "HugePages_Total"), 0U);  // a count, not kB
}

TEST(proc_stat_test, MeminfoWithoutMemAvailableFallsBackToFreeBuffersCached) {
  auto const text =
      "MemTotal:        1000 kB\nMemFree:          100 kB\nBuffers:           20 kB\n"
      "Cached:           300 kB\nSwapCached:         5 kB\n";
  auto const memory = observe::parse_meminfo(text);
  ASSERT_TRUE(memory.has_value());
  EXPECT_EQ(memory->available, 420U * 1024U);  // SwapCached is not Cached
  EXPECT_EQ(memory->used(), 580U * 1024U);
  EXPECT_FALSE(observe::parse_meminfo("MemFree: 100 kB\n").has_value());
  EXPECT_FALSE(observe::parse_meminfo("MemTotal: 1000 kB\nMemFree: 100 kB\n").has_value());
  EXPECT_FALSE(observe::parse_meminfo("MemTotal: 1000 MB\nMemAvailable: 10 kB\n").has_value());
}

TEST(proc_stat_test, ReadsThisProcessFiles) {
  auto const stat = observe::read_proc_file("/proc/self/stat");
  ASSERT_TRUE(stat.has_value());
  EXPECT_TRUE(observe::parse_process_stat(*stat).has_value()) << *stat;
  auto const head = observe::read_proc_file("/proc/self/status", 16);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->size(), 16U);
  EXPECT_FALSE(observe::read_proc_file("/proc/self/no-such-file").has_value());
}

// ---------------------------------------------------------------------------------------------
// The process readers

TEST(process_test, PeakRssRisesAboveItsLastPeakWhenMoreIsTouched) {
  auto const peak_before = observe::peak_rss_bytes();
  auto const status = observe::read_proc_file("/proc/self/status");
  ASSERT_TRUE(peak_before.has_value());
  ASSERT_TRUE(status.has_value());
  auto const rss = observe::parse_status_rss_bytes(*status);
  ASSERT_TRUE(rss.has_value());
  // Touched until the resident set is 32 MiB past the old peak, so that the peak must move.
  std::size_t const extra = static_cast<std::size_t>(*peak_before - *rss) + (32U << 20);
  std::vector<char> touched(extra, 1);
  auto const peak_after = observe::peak_rss_bytes();
  ASSERT_TRUE(peak_after.has_value());
  EXPECT_GE(*peak_after, *peak_before + (16U << 20)) << "touched " << touched.size() << " bytes";
}

TEST(process_test, ThreadCpuTimeLeavesOutSleep) {
  double const start = thread_cpu_seconds();
  std::this_thread::sleep_for(200ms);
  // A wall clock would have moved by 0.2 s; a sleeping thread runs for microseconds.
  EXPECT_LT(thread_cpu_seconds() - start, 0.1);
  EXPECT_GE(thread_cpu_seconds(), start);
}

}  // namespace
