// The example of docs/diagnosis.md: per-stage statistics, the bottleneck in one sentence, a
// JSON-lines log and a trace for chrome://tracing or ui.perfetto.dev. Built as
// build/bin/diagnosis_example and run by ctest (label "examples"); it exits non-zero if the
// diagnosis misses the bottleneck it was built to have.
#include <gpufeed/gpufeed.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

int main() {
  // Reads that take 2 ms (storage latency, decoding) on 2 workers, and a training step that
  // takes 1 ms: the loader cannot keep up.
  gpufeed::sample_spec spec;
  spec.add("image", gpufeed::dtype::u8, {32, 32, 3}).add("label", gpufeed::dtype::i64, {});
  auto data = std::make_shared<gpufeed::synthetic>(
      10'000, spec, gpufeed::synthetic_options{.sleep = std::chrono::milliseconds{2}});
  gpufeed::loader loader{data,
                         {.batch_size = 16,
                          .workers = 2,
                          .prefetch_depth = 4,
                          .trace_events = 10'000}};  // keep the last 10k spans for a trace

  auto const dir = std::filesystem::temp_directory_path();
  gpufeed::stats_writer log{dir / "gpufeed-stats.jsonl"};  // one timestamped JSON line a write
  for (int step = 0; step < 40; ++step) {
    auto batch = loader.next();
    std::this_thread::sleep_for(std::chrono::milliseconds{1});  // the training step
    if (step % 10 == 9) {
      log.write(loader.snapshot());
    }
  }

  auto const s = loader.snapshot();
  std::cout << "read:          " << s.read.count << " samples, p50 " << s.read.p50_s * 1e3
            << " ms, p99 " << s.read.p99_s * 1e3 << " ms\n"
            << "consumer wait: " << s.consumer_wait.count << " calls, p50 "
            << s.consumer_wait.p50_s * 1e3 << " ms, p99 " << s.consumer_wait.p99_s * 1e3 << " ms\n"
            << "stall:         " << 100 * s.steady_stall_fraction() << " % after the first batch\n";

  auto const verdict = gpufeed::diagnose(s);
  std::cout << gpufeed::to_string(verdict.kind) << ": " << verdict.sentence << "\n";

  loader.write_trace(dir / "gpufeed-trace.json");  // open it in ui.perfetto.dev
  std::cout << "trace: " << (dir / "gpufeed-trace.json").string() << "\n";
  std::filesystem::remove(dir / "gpufeed-stats.jsonl");
  return verdict.kind == gpufeed::bottleneck::input_bound ? 0 : 1;
}
