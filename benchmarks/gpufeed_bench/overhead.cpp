#include "overhead.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <memory>
#include <ostream>
#include <thread>
#include <vector>

#include "bench_clock.hpp"
#include "gpufeed/datasets/synthetic.hpp"
#include "gpufeed/loader.hpp"
#include "loader_pass.hpp"
#include "process_memory.hpp"
#include "summary_stats.hpp"
#include "table.hpp"
#include "thread_clock.hpp"
#include "wake_reference.hpp"

namespace gpufeed::bench {
namespace {

constexpr double goal_handoff_us = 10.0;
constexpr auto ring_fill_timeout = std::chrono::seconds{5};
constexpr auto ring_poll_interval = std::chrono::microseconds{20};

// Back-to-back next() + release(): what a consumer with no work of its own sees.
struct streaming_phase {
  double seconds = 0;
  std::uint64_t batches = 0;
  std::uint64_t samples = 0;
  double inside_next_s = 0;
  double inside_release_s = 0;
  double consumer_wait_s = 0;  // the loader's own count over the phase
};

// next() + release() on a full ring, one batch at a time.
struct ready_phase {
  std::vector<double> handoff_us;  // measured batches only
  std::vector<double> next_us;
  std::vector<double> release_us;
  std::vector<double> cpu_us;  // the consumer thread's CPU time over next() + release()
  std::uint64_t involuntary_switches = 0;
  std::uint64_t excluded = 0;  // the ring did not fill within ring_fill_timeout
};

streaming_phase run_streaming(gpufeed::loader& source, std::size_t batches) {
  streaming_phase phase;
  auto const before = source.snapshot();
  auto const start = bench_clock::now();
  while (phase.batches < batches) {
    auto const t0 = bench_clock::now();
    auto next = source.next();
    auto const t1 = bench_clock::now();
    if (!next) continue;  // epoch end: the dataset is sized so that this does not happen
    phase.samples += next->size();
    next->release();
    auto const t2 = bench_clock::now();
    phase.inside_next_s += seconds_between(t0, t1);
    phase.inside_release_s += seconds_between(t1, t2);
    ++phase.batches;
  }
  phase.seconds = seconds_between(start, bench_clock::now());
  phase.consumer_wait_s = source.snapshot().consumer_wait_s - before.consumer_wait_s;
  return phase;
}

// Polls (untimed) until every slot the rest of the epoch can fill is ready. Once they are, the
// next call cannot block: only the consumer takes a slot out of the ready state.
bool wait_for_full_ring(gpufeed::loader const& source) {
  std::size_t const remaining = source.batches_per_epoch() - source.state().next_sequence;
  std::size_t const target = std::min(source.options().prefetch_depth, remaining);
  auto const deadline = bench_clock::now() + ring_fill_timeout;
  for (;;) {
    if (source.snapshot().ring_ready >= target) return true;
    if (bench_clock::now() > deadline) return false;
    std::this_thread::sleep_for(ring_poll_interval);
  }
}

ready_phase run_ready(gpufeed::loader& source, std::size_t batches) {
  ready_phase phase;
  phase.handoff_us.reserve(batches);
  phase.next_us.reserve(batches);
  phase.release_us.reserve(batches);
  phase.cpu_us.reserve(batches);
  double const cpu_clock_cost = thread_cpu_clock_overhead_seconds();
  std::uint64_t const switches_before = thread_involuntary_switches();
  for (std::size_t b = 0; b < batches;) {
    bool const full = wait_for_full_ring(source);
    double const cpu0 = thread_cpu_seconds();
    auto const t0 = bench_clock::now();
    auto next = source.next();
    auto const t1 = bench_clock::now();
    if (!next) continue;
    next->release();
    auto const t2 = bench_clock::now();
    double const cpu1 = thread_cpu_seconds();
    ++b;
    if (!full) {
      ++phase.excluded;
      continue;
    }
    phase.next_us.push_back(1e6 * seconds_between(t0, t1));
    phase.release_us.push_back(1e6 * seconds_between(t1, t2));
    phase.handoff_us.push_back(1e6 * seconds_between(t0, t2));
    phase.cpu_us.push_back(1e6 * std::max(0.0, cpu1 - cpu0 - cpu_clock_cost));
  }
  phase.involuntary_switches = thread_involuntary_switches() - switches_before;
  return phase;
}

}  // namespace

overhead_config default_overhead_config() {
  overhead_config config;
  config.common.batch_size = 64;
  config.common.workers = default_workers();
  config.common.prefetch_depth = 4;
  config.common.batches = 5000;
  return config;
}

CLI::App* add_overhead_command(CLI::App& app, overhead_config& config) {
  CLI::App* command = app.add_subcommand(
      "overhead",
      "The loader's own cost per batch (hand-off and wall clock) over a dataset that writes "
      "nothing");
  add_common_options(*command, config.common);
  command
      ->add_option("--sample-bytes", config.sample_bytes,
                   "Bytes per sample; sizes the ring only, since reads write nothing")
      ->type_name("BYTES")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32))
      ->capture_default_str();
  command
      ->add_option("--repeats", config.repeats,
                   "Runs, each on a fresh loader; the report gives the medians")
      ->type_name("N")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000}))
      ->capture_default_str();
  command
      ->add_option("--warmup", config.warmup,
                   "Untimed batches before each phase (streaming and ready) of each run")
      ->type_name("N")
      ->capture_default_str();
  command->footer(
      "Dataset: gpufeed::synthetic with write = false. Each repeat has two phases of --batches "
      "batches on one loader. Streaming: next() + release() back to back; gives batches/s and "
      "the wall-clock time per batch. Ready: before each batch the consumer waits, untimed, "
      "until every ring slot is ready (so next() cannot block), then times next() + release(); "
      "a batch whose ring did not fill within 5 s is excluded. handoff_us = mean of the ready "
      "phase; goal < 10 us. Reference row condvar_wake: lock + notify_one() with --workers threads "
      "parked on a condition variable, timed the same way (this machine's cost of waking one idle "
      "worker).");
  return command;
}

report run_overhead(overhead_config const& config, std::ostream& progress) {
  apply_log_level(config.common);
  auto const& common = config.common;
  gpufeed::sample_spec spec;
  spec.add("data", gpufeed::dtype::u8, {static_cast<std::int64_t>(config.sample_bytes)});
  // One epoch covers both phases and their warm-ups, with room for a full ring at the end.
  std::size_t const epoch_batches =
      2 * (config.warmup + common.batches) + common.prefetch_depth + 1;
  auto const data = std::make_shared<gpufeed::synthetic>(
      epoch_batches * common.batch_size, spec, gpufeed::synthetic_options{.write = false});

  progress << "overhead: " << common.workers << " workers, batch " << common.batch_size
           << ", depth " << common.prefetch_depth << ", " << config.repeats << " repeats of "
           << common.batches << " batches per phase\n";

  std::vector<double> handoff, handoff_p50, handoff_p99, handoff_max, next_us, release_us;
  std::vector<double> wall_us, batches_ps, samples_ps, streaming_handoff, stall;
  std::vector<double> wake, wake_p50, wake_p99, cpu_us, switches_per_batch;
  std::uint64_t excluded = 0, measured = 0;
  std::size_t pinned = 0;
  for (std::size_t r = 0; r < config.repeats; ++r) {
    gpufeed::loader source{data, to_loader_options(common)};
    consume(source, config.warmup);
    auto const stream = run_streaming(source, common.batches);
    consume(source, config.warmup);
    auto const ready = run_ready(source, common.batches);
    pinned = source.snapshot().pinned_bytes;

    auto const batches = static_cast<double>(stream.batches);
    wall_us.push_back(1e6 * stream.seconds / batches);
    batches_ps.push_back(batches / stream.seconds);
    samples_ps.push_back(static_cast<double>(stream.samples) / stream.seconds);
    double const inside = stream.inside_next_s + stream.inside_release_s;
    streaming_handoff.push_back(1e6 * std::max(0.0, inside - stream.consumer_wait_s) / batches);
    stall.push_back(stream.consumer_wait_s / stream.seconds);
    handoff.push_back(mean(ready.handoff_us));
    handoff_p50.push_back(percentile(ready.handoff_us, 50));
    handoff_p99.push_back(percentile(ready.handoff_us, 99));
    handoff_max.push_back(percentile(ready.handoff_us, 100));
    next_us.push_back(mean(ready.next_us));
    release_us.push_back(mean(ready.release_us));
    cpu_us.push_back(mean(ready.cpu_us));
    switches_per_batch.push_back(static_cast<double>(ready.involuntary_switches) /
                                 static_cast<double>(common.batches));
    auto const wakes = measure_condvar_wake_us(common.workers, common.batches);
    wake.push_back(mean(wakes));
    wake_p50.push_back(percentile(wakes, 50));
    wake_p99.push_back(percentile(wakes, 99));
    excluded += ready.excluded;
    measured += ready.handoff_us.size();

    progress << "  repeat " << r + 1 << '/' << config.repeats << ": handoff "
             << format_fixed(handoff.back(), 3) << " us (p50 "
             << format_fixed(handoff_p50.back(), 3) << ", p99 "
             << format_fixed(handoff_p99.back(), 3) << ", " << ready.excluded << " excluded)  wall "
             << format_fixed(wall_us.back(), 2) << " us/batch  condvar_wake "
             << format_fixed(wake.back(), 3) << " us\n";
  }

  bench_result result;
  result.loader = "gpufeed";
  result.samples_per_s = median(samples_ps);
  result.batches_per_s = median(batches_ps);
  result.handoff_us = median(handoff);
  result.peak_rss_bytes = peak_rss_bytes();
  result.pinned_bytes = pinned;
  result.details = {{"handoff_us_runs", handoff},
                    {"handoff_p50_us", median(handoff_p50)},
                    {"handoff_p99_us", median(handoff_p99)},
                    {"handoff_max_us", median(handoff_max)},
                    {"next_us", median(next_us)},
                    {"release_us", median(release_us)},
                    {"handoff_consumer_cpu_us", median(cpu_us)},
                    {"involuntary_switches_per_batch", median(switches_per_batch)},
                    {"handoff_batches_measured", measured},
                    {"handoff_batches_excluded", excluded},
                    {"wall_us_per_batch", median(wall_us)},
                    {"wall_us_per_batch_runs", wall_us},
                    {"streaming_handoff_us", median(streaming_handoff)},
                    {"streaming_consumer_stall_fraction", median(stall)}};

  bench_result wake_result;
  wake_result.loader = "condvar_wake";
  wake_result.handoff_us = median(wake);
  wake_result.details = {{"what",
                          "lock + notify_one() with `workers` threads parked on a condition "
                          "variable: the machine's cost of waking one idle worker"},
                         {"parked_threads", common.workers},
                         {"handoff_us_runs", wake},
                         {"handoff_p50_us", median(wake_p50)},
                         {"handoff_p99_us", median(wake_p99)}};

  report rep;
  rep.command = "overhead";
  rep.config = to_json(common);
  rep.config["sample_bytes"] = config.sample_bytes;
  rep.config["repeats"] = config.repeats;
  rep.config["warmup"] = config.warmup;
  rep.config["dataset_samples"] = data->size();
  rep.results = {result, wake_result};
  rep.goals.push_back({"handoff_us", "<", goal_handoff_us, *result.handoff_us});
  return rep;
}

}  // namespace gpufeed::bench
