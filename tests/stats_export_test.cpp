// stats_export: per-stage statistics of a real loader, their JSON-lines form, the ring's
// occupancy history and the Trace Event Format trace.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// Waits until the workers have stopped reading (the ring is full and nothing is leased), so
// that the dataset's own count of reads and the loader's can be compared. The deadline only
// turns a hang into a failure.
gpufeed::stats settled(gpufeed::loader const& loader, gpufeed::test::echo_dataset const& data) {
  gpufeed::stats s;
  bool const done = gpufeed::test::eventually(
      [&] {
        s = loader.snapshot();
        return s.ring_ready == s.ring_slots && s.read.count == data.total_reads();
      },
      60s);
  EXPECT_TRUE(done) << "the loader did not settle: " << s.to_string();
  return s;
}

void expect_stage_consistent(gpufeed::stage_stats const& s, char const* name) {
  SCOPED_TRACE(name);
  EXPECT_LE(s.p50_s, s.p99_s);
  EXPECT_LE(s.p99_s, s.max_s);
  EXPECT_LE(s.max_s, s.total_s + 1e-12);
  if (s.count == 0) {
    EXPECT_EQ(s.total_s, 0.0);
  }
}

TEST(stats_export_test, StageCountsMatchWhatTheLoaderDid) {
  auto data = std::make_shared<gpufeed::test::sleepy_dataset>(
      8 * 25, [](std::size_t) { return std::chrono::microseconds{200}; });
  gpufeed::loader loader{data, {.batch_size = 8, .workers = 3, .prefetch_depth = 3}};
  std::uint64_t consumed = 0;
  std::uint64_t calls = 0;
  for (;;) {
    ++calls;
    auto batch = loader.next();
    if (!batch) {
      break;
    }
    ++consumed;
  }
  ASSERT_EQ(consumed, 25U);
  auto const s = settled(loader, *data);
  EXPECT_EQ(s.batches, consumed);
  // One wait per next() that took a batch; the call that ended the epoch did not wait.
  EXPECT_EQ(s.consumer_wait.count, calls - 1);
  EXPECT_EQ(s.read.count, data->total_reads());
  EXPECT_GE(s.read.count, s.samples);
  // No stage takes more time than its threads had.
  EXPECT_LE(s.read.total_s, s.workers * s.wall_s);
  EXPECT_LE(s.slot_wait.total_s, s.workers * s.wall_s);
  EXPECT_LE(s.consumer_wait.total_s, s.wall_s);
  // Reads sleep 200 us: the median read cannot be shorter (the histogram is within 12.5 %).
  EXPECT_GE(s.read.p50_s, 200e-6 * 0.875);
  expect_stage_consistent(s.read, "read");
  expect_stage_consistent(s.slot_wait, "slot_wait");
  expect_stage_consistent(s.consumer_wait, "consumer_wait");
  EXPECT_EQ(s.h2d.count, 0U);  // the host path copies nothing
  EXPECT_GT(s.first_batch_s, 0.0);
  EXPECT_LE(s.first_wait_s, s.first_batch_s);
  EXPECT_LE(s.first_wait_s, s.consumer_wait_s);
}

TEST(stats_export_test, FailedAndTimedOutWaitsAreCounted) {
  // Batch 1 raises; batch 2 waits on a gated sample, so one call times out before it passes.
  auto g = std::make_shared<gpufeed::test::gate>();
  auto data = std::make_shared<gpufeed::test::gated_dataset>(40, g, std::set<std::size_t>{9});
  auto failing = std::make_shared<gpufeed::test::failing_dataset>(40, std::set<std::size_t>{5});
  {
    gpufeed::loader loader{failing, {.batch_size = 4, .workers = 2, .prefetch_depth = 2}};
    ASSERT_TRUE(loader.next().has_value());
    EXPECT_THROW((void)loader.next(), gpufeed::sample_error);
    ASSERT_TRUE(loader.next().has_value());
    auto const s = loader.snapshot();
    EXPECT_EQ(s.batches, 2U);
    EXPECT_EQ(s.failed_batches, 1U);
    EXPECT_EQ(s.consumer_wait.count, 3U);
  }
  gpufeed::loader loader{data,
                         {.batch_size = 4, .workers = 2, .prefetch_depth = 2, .timeout = 20ms}};
  // Every next() that reached its wait counts, the timed-out ones included. A busy machine may
  // time out anywhere: such calls are counted, and retried.
  std::uint64_t calls = 0;
  auto const next_batch = [&] {
    for (int attempt = 0; attempt < 3000; ++attempt) {
      ++calls;
      try {
        return loader.next();
      } catch (gpufeed::timeout_error const&) {
      }
    }
    ADD_FAILURE() << "no batch within 3000 timeouts";
    return std::optional<gpufeed::batch>{};
  };
  ASSERT_TRUE(next_batch().has_value());
  ASSERT_TRUE(next_batch().has_value());
  ++calls;
  EXPECT_THROW((void)loader.next(), gpufeed::timeout_error);  // batch 2 holds sample 9
  auto const before = loader.snapshot();
  EXPECT_EQ(before.consumer_wait.count, calls);
  EXPECT_GE(before.consumer_wait.max_s, 0.020 * 0.99);  // the timed-out wait is in
  g->open();
  ASSERT_TRUE(next_batch().has_value());
  auto const after = loader.snapshot();
  EXPECT_EQ(after.consumer_wait.count, calls);
  EXPECT_EQ(after.batches, 3U);
}

TEST(stats_export_test, RingHistoryIsBoundedOrderedAndSpansTheRun) {
  // 300 batches 10 ms apart: more next() calls, 10 ms apart, than the history holds, so it has
  // thinned itself out at least once.
  auto data = std::make_shared<gpufeed::test::echo_dataset>(100'000);
  gpufeed::loader loader{data, {.batch_size = 4, .workers = 2, .prefetch_depth = 3}};
  for (int i = 0; i < 300; ++i) {
    auto batch = loader.next();
    ASSERT_TRUE(batch.has_value());
    std::this_thread::sleep_for(10ms);
  }
  auto const s = loader.snapshot();
  auto const& h = s.ring_history;
  ASSERT_FALSE(h.empty());
  EXPECT_LE(h.size(), gpufeed::stats::ring_history_capacity);
  EXPECT_GE(h.size(), gpufeed::stats::ring_history_capacity / 4);
  EXPECT_GE(s.ring_history_interval_s, 0.02);  // doubled from 10 ms at least once
  for (std::size_t i = 0; i < h.size(); ++i) {
    EXPECT_LE(h[i].ready + h[i].leased + h[i].filling, s.ring_slots) << i;
    EXPECT_GE(h[i].ready, 1U) << i;  // sampled as next() takes a ready batch
    EXPECT_LE(h[i].t_s, s.wall_s) << i;
    if (i > 0) {
      EXPECT_GT(h[i].t_s, h[i - 1].t_s) << i;
    }
  }
  // From the first batch to (nearly) the last: the last sample is at most two spacings old.
  EXPECT_LE(h.front().t_s, s.first_batch_s + 1e-9);
  EXPECT_GE(h.back().t_s, s.wall_s - 2 * s.ring_history_interval_s - 0.05);
}

TEST(stats_export_test, JsonLineParsesWithStableFields) {
  auto data = std::make_shared<gpufeed::test::echo_dataset>(1000, 16);
  gpufeed::loader loader{data, {.batch_size = 10, .workers = 2, .prefetch_depth = 2}};
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(loader.next().has_value());
  }
  auto const s = loader.snapshot();
  auto const text = gpufeed::to_json(s);
  EXPECT_EQ(text.find('\n'), std::string::npos);
  auto const j = json::parse(text);
  for (char const* key : {"wall_s",
                          "batches",
                          "samples",
                          "bytes",
                          "samples_per_s",
                          "bytes_per_s",
                          "stall_fraction",
                          "steady_stall_fraction",
                          "worker_busy_fraction",
                          "read_s",
                          "slot_wait_s",
                          "consumer_wait_s",
                          "first_batch_s",
                          "first_wait_s",
                          "samples_read",
                          "skipped",
                          "failed_batches",
                          "workers",
                          "ring_slots",
                          "autotuned",
                          "worker_threads",
                          "ring_capacity",
                          "ring_grown",
                          "ring_max_slots",
                          "autotune_changes",
                          "autotune_last_change_batch",
                          "ring_ready",
                          "ring_leased",
                          "ring_ready_mean",
                          "slot_bytes",
                          "host_bytes",
                          "pinned_bytes",
                          "bookkeeping_bytes",
                          "staging",
                          "device",
                          "device_bytes",
                          "copies",
                          "h2d_bytes",
                          "timed_copies",
                          "h2d_s",
                          "transform_s",
                          "copy_wait_s",
                          "stages",
                          "diagnosis"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["batches"].get<std::uint64_t>(), 20U);
  EXPECT_EQ(j["samples"].get<std::uint64_t>(), s.samples);
  EXPECT_EQ(j["bytes"].get<std::uint64_t>(), s.bytes);
  EXPECT_EQ(j["workers"].get<unsigned>(), 2U);
  EXPECT_FALSE(j["autotuned"].get<bool>());
  EXPECT_EQ(j["worker_threads"].get<unsigned>(), s.worker_threads);
  EXPECT_EQ(j["device"].get<int>(), -1);
  EXPECT_EQ(j["staging"].get<std::string>(), "host");
  EXPECT_NEAR(j["wall_s"].get<double>(), s.wall_s, 1e-6 * s.wall_s);
  for (char const* stage : {"read", "slot_wait", "consumer_wait", "h2d", "transform"}) {
    SCOPED_TRACE(stage);
    auto const& st = j["stages"][stage];
    for (char const* key : {"count", "total_s", "p50_s", "p99_s", "max_s"}) {
      EXPECT_TRUE(st.contains(key)) << key;
    }
  }
  EXPECT_EQ(j["stages"]["read"]["count"].get<std::uint64_t>(), s.read.count);
  EXPECT_EQ(j["stages"]["consumer_wait"]["count"].get<std::uint64_t>(), 20U);
  EXPECT_NEAR(j["stages"]["read"]["p99_s"].get<double>(), s.read.p99_s, 1e-6 * s.read.p99_s);
  auto const d = gpufeed::diagnose(s);
  EXPECT_EQ(j["diagnosis"]["kind"].get<std::string>(), gpufeed::to_string(d.kind));
  EXPECT_EQ(j["diagnosis"]["sentence"].get<std::string>(), d.sentence);
}

TEST(stats_export_test, JsonEscapesStringsAndWritesNoNonFiniteNumbers) {
  gpufeed::stats s;
  s.staging = "quote\" backslash\\ newline\n tab\t bell\x07 utf8 \xc3\xa9";
  s.read_s = std::numeric_limits<double>::quiet_NaN();
  s.wall_s = std::numeric_limits<double>::infinity();
  auto const j = json::parse(gpufeed::to_json(s));
  EXPECT_EQ(j["staging"].get<std::string>(), s.staging);
  EXPECT_TRUE(j["read_s"].is_null());
  EXPECT_TRUE(j["wall_s"].is_null());
  EXPECT_EQ(j["diagnosis"]["kind"].get<std::string>(), "not_enough_data");
}

TEST(stats_export_test, JsonLineIsTimestampedAndNewlineTerminated) {
  gpufeed::stats s;
  s.batches = 7;
  std::ostringstream out;
  // 2024-01-02T03:04:05.678Z
  auto const when = std::chrono::system_clock::time_point{std::chrono::milliseconds{1704164645678}};
  gpufeed::write_json_line(out, s, when);
  auto const line = out.str();
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  auto const j = json::parse(line);
  EXPECT_EQ(j["time"].get<std::string>(), "2024-01-02T03:04:05.678Z");
  EXPECT_DOUBLE_EQ(j["unix_s"].get<double>(), 1704164645.678);
  EXPECT_EQ(j["batches"].get<std::uint64_t>(), 7U);
  EXPECT_EQ(line.rfind("{\"time\":", 0), 0U);  // time first
}

TEST(stats_export_test, StatsWriterAppendsOneLinePerWrite) {
  auto const path = std::filesystem::temp_directory_path() /
                    ("gpufeed-stats-" + std::to_string(::getpid()) + ".jsonl");
  std::filesystem::remove(path);
  {
    std::ofstream existing{path};
    existing << "{\"earlier\":true}\n";
  }
  gpufeed::stats s;
  {
    gpufeed::stats_writer writer{path};
    EXPECT_EQ(writer.path(), path);
    s.batches = 1;
    writer.write(s);
    s.batches = 2;
    writer.write(s);
  }
  std::ifstream in{path};
  std::vector<json> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(json::parse(line));
  }
  std::filesystem::remove(path);
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_TRUE(lines[0]["earlier"].get<bool>());
  EXPECT_EQ(lines[1]["batches"].get<int>(), 1);
  EXPECT_EQ(lines[2]["batches"].get<int>(), 2);
  EXPECT_TRUE(lines[2].contains("time"));
  EXPECT_THROW(gpufeed::stats_writer{"/nonexistent-gpufeed-dir/stats.jsonl"}, gpufeed::file_error);
}

// ---- trace
// ---------------------------------------------------------------------------------------

json trace_of(gpufeed::loader const& loader) {
  std::ostringstream out;
  loader.write_trace(out);
  return json::parse(out.str());
}

TEST(stats_export_test, TraceHasStageSpansWithinTheRun) {
  auto data = std::make_shared<gpufeed::test::sleepy_dataset>(
      1000, [](std::size_t) { return std::chrono::microseconds{100}; });
  gpufeed::loader loader{
      data, {.batch_size = 8, .workers = 2, .prefetch_depth = 3, .trace_events = 10'000}};
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(loader.next().has_value());
  }
  auto const t = trace_of(loader);
  auto const s = loader.snapshot();  // after the trace: its wall time covers every span
  EXPECT_EQ(t["displayTimeUnit"].get<std::string>(), "ms");
  ASSERT_TRUE(t["traceEvents"].is_array());
  std::set<std::string> const names{"read", "slot wait", "batch complete", "consumer wait"};
  std::map<std::string, std::size_t> spans;
  std::set<std::uint64_t> waited_for;
  std::set<std::uint64_t> thread_names;
  for (auto const& e : t["traceEvents"]) {
    auto const phase = e["ph"].get<std::string>();
    ASSERT_TRUE(phase == "X" || phase == "M") << e.dump();
    EXPECT_EQ(e["pid"].get<int>(), 1);
    auto const tid = e["tid"].get<std::uint64_t>();
    if (phase == "M") {
      if (e["name"] == "thread_name") {
        thread_names.insert(tid);
      }
      continue;
    }
    auto const name = e["name"].get<std::string>();
    ASSERT_TRUE(names.count(name) == 1) << name;
    ++spans[name];
    auto const ts = e["ts"].get<double>();
    auto const dur = e["dur"].get<double>();
    EXPECT_GE(ts, 0.0) << e.dump();
    EXPECT_GE(dur, 0.0) << e.dump();
    EXPECT_LE(ts + dur, s.wall_s * 1e6 + 1.0) << e.dump();
    if (name == "consumer wait") {
      EXPECT_EQ(tid, 2U);
      waited_for.insert(e["args"]["batch"].get<std::uint64_t>());
    } else {
      EXPECT_LT(tid, 2U) << e.dump();
    }
    if (name == "read") {
      EXPECT_LT(e["args"]["index"].get<std::uint64_t>(), 1000U);
      EXPECT_TRUE(e["args"].contains("batch"));
      EXPECT_GE(dur, 100.0 * 0.99) << "a read sleeps 100 us";
    }
  }
  EXPECT_EQ(thread_names, (std::set<std::uint64_t>{0, 1, 2}));
  EXPECT_EQ(spans["consumer wait"], 20U);
  EXPECT_EQ(waited_for.size(), 20U);
  EXPECT_GE(spans["read"], 20U * 8);
  EXPECT_LE(spans["read"], s.read.count);
  EXPECT_GE(spans["batch complete"], 20U);
  EXPECT_EQ(t["otherData"]["capacity"].get<std::size_t>(), 10'000U);
}

TEST(stats_export_test, TraceKeepsAtMostTheLastSpansAsked) {
  auto data = std::make_shared<gpufeed::test::echo_dataset>(10'000);
  gpufeed::loader loader{data,
                         {.batch_size = 8, .workers = 2, .prefetch_depth = 2, .trace_events = 10}};
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(loader.next().has_value());
  }
  auto const t = trace_of(loader);
  std::size_t kept = 0;
  for (auto const& e : t["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++kept;
    // A worker's slot wait names no batch (under load, workers wait for a slot often); every
    // other span kept is of the last batches taken (50) or prefetched (2 more), never the first.
    if (e["name"] == "slot wait") continue;
    ASSERT_TRUE(e["args"].contains("batch")) << e.dump();
    EXPECT_GE(e["args"]["batch"].get<std::uint64_t>(), 40U) << e.dump();
  }
  // Far more were recorded. The workers go on prefetching while the trace is written, and a
  // span a worker is writing at that moment is left out: at most one per worker (2) is missing.
  // (It read `kept == 10` once and failed in CI under the sanitizers; trace_recorder_test checks
  // the exact count where no one records.)
  EXPECT_LE(kept, 10U);
  EXPECT_GE(kept, 10U - 2);
  EXPECT_EQ(t["otherData"]["spans_kept"].get<std::size_t>(), kept);
  EXPECT_GT(t["otherData"]["spans_recorded"].get<std::uint64_t>(), 50U * 8);
  EXPECT_LE(t["otherData"]["spans_dropped"].get<std::uint64_t>(),
            t["otherData"]["spans_recorded"].get<std::uint64_t>());
}

TEST(stats_export_test, TraceBeforeTheFirstBatchHasNoSpansAndDoesNotWait) {
  // With a given order and none given yet, no sample is read: the layout cannot be learned, and
  // write_trace must not wait for it.
  auto data = std::make_shared<gpufeed::test::echo_dataset>(100);
  gpufeed::loader loader{
      data,
      {.batch_size = 8, .workers = 1, .order = gpufeed::sample_order::given, .trace_events = 100}};
  auto const t = trace_of(loader);
  ASSERT_TRUE(t["traceEvents"].is_array());
  for (auto const& e : t["traceEvents"]) {
    EXPECT_EQ(e["ph"].get<std::string>(), "M") << e.dump();
  }
  EXPECT_EQ(t["otherData"]["spans_kept"].get<std::size_t>(), 0U);
  EXPECT_EQ(t["otherData"]["capacity"].get<std::size_t>(), 100U);  // trace_events, as later
  gpufeed::loader untraced{data,
                           {.batch_size = 8, .workers = 1, .order = gpufeed::sample_order::given}};
  std::ostringstream out;
  EXPECT_THROW(untraced.write_trace(out), gpufeed::logic_error);
}

TEST(stats_export_test, TraceIsOffByDefaultAndWritesToAFile) {
  auto data = std::make_shared<gpufeed::test::echo_dataset>(100);
  {
    gpufeed::loader loader{data, {.batch_size = 8, .workers = 1}};
    std::ostringstream out;
    EXPECT_THROW(loader.write_trace(out), gpufeed::logic_error);
    // Refused before the file is opened: an existing file is left as it was.
    auto const kept = std::filesystem::temp_directory_path() /
                      ("gpufeed-trace-off-" + std::to_string(::getpid()) + ".json");
    std::ofstream{kept} << "kept";
    EXPECT_THROW(loader.write_trace(kept), gpufeed::logic_error);
    std::string text;
    std::getline(std::ifstream{kept}, text);
    std::filesystem::remove(kept);
    EXPECT_EQ(text, "kept");
  }
  EXPECT_THROW((gpufeed::loader{data, {.batch_size = 8, .trace_events = (1U << 24) + 1}}),
               gpufeed::logic_error);
  gpufeed::loader loader{data, {.batch_size = 8, .workers = 1, .trace_events = 100}};
  ASSERT_TRUE(loader.next().has_value());
  auto const path = std::filesystem::temp_directory_path() /
                    ("gpufeed-trace-" + std::to_string(::getpid()) + ".json");
  loader.write_trace(path);
  std::ifstream in{path};
  auto const t = json::parse(in);
  std::filesystem::remove(path);
  EXPECT_TRUE(t["traceEvents"].is_array());
  EXPECT_THROW(loader.write_trace(std::filesystem::path{"/nonexistent-gpufeed-dir/trace.json"}),
               gpufeed::file_error);
}

}  // namespace
