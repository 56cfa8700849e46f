#include "overhead.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <ostream>
#include <thread>
#include <vector>

#include "bench_clock.hpp"
#include "gpufeed/datasets/synthetic.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/observe/process.hpp"
#include "loader_pass.hpp"
#include "summary_stats.hpp"
#include "table.hpp"
#include "wake_reference.hpp"

namespace gpufeed::bench {
namespace {

namespace observe = gpufeed::observe;

constexpr double goal_handoff_us = 10.0;
constexpr auto ring_fill_timeout = std::chrono::seconds{5};
constexpr auto ring_poll_interval = std::chrono::microseconds{20};

// The consumer's cost of each measured next() + release() of one phase.
struct handoff_series {
  std::vector<double> handoff_us, next_us, release_us, cpu_us;
  std::uint64_t involuntary_switches = 0;
  std::uint64_t excluded =
      0;  // batches whose preparation failed (the best case's ring did not fill)
};

// One phase's figures, and the same over the repeats.
struct handoff_figures {
  double mean = 0, p50 = 0, p99 = 0, max = 0, next = 0, release = 0, cpu = 0, switches = 0;
  std::uint64_t measured = 0, excluded = 0;
};

// The CPU time an empty window of the thread clock reports (the clock's own cost).
double thread_clock_cost_s() {
  std::vector<double> windows(1000);
  for (auto& window : windows) {
    double const start = observe::thread_cpu_seconds();
    window = observe::thread_cpu_seconds() - start;
  }
  return median(std::move(windows));
}

// Times next() and release() of `batches` batches, the consumer holding each for `step` in
// between. Before each, `prepare()` runs untimed; a batch it answers false for is not counted.
// The consumer's CPU time is read around next() + release() only without a step (nothing but
// the clock's own cost between them, as the hand-off alone is measured): a system call between
// next() and release() would slow release() down.
template <class Prepare>
handoff_series time_handoffs(gpufeed::loader& source, std::size_t batches,
                             std::chrono::nanoseconds step, Prepare&& prepare) {
  handoff_series s;
  bool const cpu = step.count() <= 0;
  double const clock_cost = cpu ? thread_clock_cost_s() : 0.0;
  std::uint64_t const switches_before = observe::thread_involuntary_switches();
  for (std::size_t b = 0; b < batches; ++b) {
    bool const counted = prepare();
    double const cpu0 = cpu ? observe::thread_cpu_seconds() : 0.0;
    auto const t0 = bench_clock::now();
    auto batch = next_batch(source);
    auto const t1 = bench_clock::now();
    run_step(step, /*spin=*/false);
    auto const t2 = bench_clock::now();
    batch.release();
    auto const t3 = bench_clock::now();
    double const cpu1 = cpu ? observe::thread_cpu_seconds() : 0.0;
    if (!counted) {
      ++s.excluded;
      continue;
    }
    s.next_us.push_back(1e6 * seconds_between(t0, t1));
    s.release_us.push_back(1e6 * seconds_between(t2, t3));
    s.handoff_us.push_back(s.next_us.back() + s.release_us.back());
    if (cpu) s.cpu_us.push_back(1e6 * std::max(0.0, cpu1 - cpu0 - clock_cost));
  }
  s.involuntary_switches = observe::thread_involuntary_switches() - switches_before;
  return s;
}

handoff_figures figures_of(handoff_series const& s) {
  auto const measured = static_cast<double>(std::max<std::size_t>(s.handoff_us.size(), 1));
  return {mean(s.handoff_us),
          percentile(s.handoff_us, 50),
          percentile(s.handoff_us, 99),
          percentile(s.handoff_us, 100),
          mean(s.next_us),
          mean(s.release_us),
          s.cpu_us.empty() ? -1.0 : mean(s.cpu_us),  // -1: not measured
          static_cast<double>(s.involuntary_switches) / measured,
          s.handoff_us.size(),
          s.excluded};
}

// Medians over the repeats; the maximum is the largest of all.
json to_json(std::vector<handoff_figures> const& runs) {
  auto const each = [&](double handoff_figures::*figure) {
    std::vector<double> values;
    for (auto const& run : runs) values.push_back(run.*figure);
    return values;
  };
  std::uint64_t measured = 0, excluded = 0;
  for (auto const& run : runs) {
    measured += run.measured;
    excluded += run.excluded;
  }
  auto const maxima = each(&handoff_figures::max);
  return {{"handoff_us", median(each(&handoff_figures::mean))},
          {"handoff_us_runs", each(&handoff_figures::mean)},
          {"p50_us", median(each(&handoff_figures::p50))},
          {"p99_us", median(each(&handoff_figures::p99))},
          {"max_us", maxima.empty() ? 0.0 : *std::max_element(maxima.begin(), maxima.end())},
          {"next_us", median(each(&handoff_figures::next))},
          {"release_us", median(each(&handoff_figures::release))},
          {"consumer_cpu_us", runs.empty() || runs.front().cpu < 0
                                  ? json(nullptr)
                                  : json(median(each(&handoff_figures::cpu)))},
          {"involuntary_switches_per_batch", median(each(&handoff_figures::switches))},
          {"batches_measured", measured},
          {"batches_excluded", excluded}};
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

}  // namespace

CLI::App* add_overhead_command(CLI::App& app, overhead_config& config) {
  CLI::App* command = add_command(
      app,
      {.name = "overhead",
       .description = "The loader's own cost per batch (hand-off in the steady state and at best, "
                      "wall clock) over a dataset that writes nothing",
       .footer =
           "Dataset: gpufeed::synthetic with write = false. Each repeat has three phases of "
           "--batches batches on one loader. Streaming: next() + release() back to back; gives "
           "batches/s and the wall-clock time per batch. Steady: next(), a sleep of --step-us, "
           "release(); next() and release() are timed (handoff_us = their sum; the loader's stall "
           "fraction over the phase shows that it kept up). Best case: before each batch the "
           "consumer waits, untimed, until every ring slot is ready, then times next() + "
           "release(); a batch whose ring did not fill within 5 s is excluded. Goal: steady "
           "handoff_us < 10 us (the median over the repeats of each repeat's mean). Reference row "
           "condvar_wake: lock + notify_one() with --workers threads parked on a condition "
           "variable, timed the same way (this machine's cost of waking one idle worker).",
       .batches = "Timed batches of each phase of each repeat"},
      config.common);
  add_value(*command, "--sample-bytes", config.sample_bytes,
            "Bytes per sample; sizes the ring only, since reads write nothing", "BYTES")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32));
  add_value(*command, "--step-us", config.step_us,
            "Training step of the steady state, in microseconds: the consumer sleeps this long "
            "between next() and release() of each batch",
            "US")
      ->check(CLI::Range(0.0, 1e6));
  add_repeat_options(
      *command, config.repeats, "Runs, each on a fresh loader; the report gives the medians",
      config.warmup,
      "Untimed batches before each phase (streaming, steady, best case) of each run");
  return command;
}

report run_overhead(overhead_config const& config, std::ostream& progress) {
  auto const& common = config.common;
  gpufeed::sample_spec spec;
  spec.add("data", gpufeed::dtype::u8, {static_cast<std::int64_t>(config.sample_bytes)});
  // One epoch covers the three phases and their warm-ups, with room for a full ring at the end.
  std::size_t const epoch_batches =
      3 * (config.warmup + common.batches) + common.prefetch_depth + 1;
  auto const data = std::make_shared<gpufeed::synthetic>(
      epoch_batches * common.batch_size, spec, gpufeed::synthetic_options{.write = false});
  auto const step = std::chrono::nanoseconds{std::llround(config.step_us * 1e3)};

  progress << "overhead: " << common.workers << " workers, batch " << common.batch_size
           << ", depth " << common.prefetch_depth << ", " << config.repeats << " repeats of "
           << common.batches << " batches per phase, steady step " << config.step_us << " us\n";

  std::vector<handoff_figures> steady, best;
  std::vector<double> wall_us, batches_ps, samples_ps, steady_stall;
  std::vector<double> wake, wake_p50, wake_p99;
  std::size_t pinned = 0;
  for (std::size_t r = 0; r < config.repeats; ++r) {
    gpufeed::loader source{data, to_loader_options(common)};
    auto const stream = time_batches(source, config.warmup, common.batches);
    consume(source, config.warmup);
    auto const before_steady = source.snapshot();
    auto const steady_start = bench_clock::now();
    steady.push_back(figures_of(time_handoffs(source, common.batches, step, [] { return true; })));
    steady_stall.push_back(
        ratio_or_zero(source.snapshot().consumer_wait_s - before_steady.consumer_wait_s,
                      seconds_between(steady_start, bench_clock::now())));
    consume(source, config.warmup);
    best.push_back(figures_of(time_handoffs(source, common.batches, std::chrono::nanoseconds{0},
                                            [&] { return wait_for_full_ring(source); })));
    pinned = source.snapshot().pinned_bytes;

    auto const batches = static_cast<double>(stream.delivered.batches);
    wall_us.push_back(1e6 * stream.seconds / batches);
    batches_ps.push_back(batches / stream.seconds);
    samples_ps.push_back(static_cast<double>(stream.delivered.samples) / stream.seconds);
    auto const wakes = measure_condvar_wake_us(common.workers, common.batches);
    wake.push_back(mean(wakes));
    wake_p50.push_back(percentile(wakes, 50));
    wake_p99.push_back(percentile(wakes, 99));

    progress << "  repeat " << r + 1 << '/' << config.repeats << ": steady handoff "
             << format_fixed(steady.back().mean, 3) << " us (p99 "
             << format_fixed(steady.back().p99, 3) << ", max " << format_fixed(steady.back().max, 1)
             << ")  best case " << format_fixed(best.back().mean, 3) << " us (p99 "
             << format_fixed(best.back().p99, 3) << ", " << best.back().excluded
             << " excluded)  wall " << format_fixed(wall_us.back(), 2) << " us/batch  condvar_wake "
             << format_fixed(wake.back(), 3) << " us\n";
  }

  bench_result result;
  result.loader = "gpufeed";
  result.samples_per_s = median(samples_ps);
  result.batches_per_s = median(batches_ps);
  result.peak_rss_bytes = observe::peak_rss_bytes();
  result.pinned_bytes = pinned;
  auto steady_json = to_json(steady);
  steady_json["step_us"] = config.step_us;
  steady_json["consumer_stall_fraction"] = median(steady_stall);
  result.handoff_us = steady_json["handoff_us"].get<double>();
  result.details = {{"steady", steady_json},
                    {"best_case", to_json(best)},
                    {"wall_us_per_batch", median(wall_us)},
                    {"wall_us_per_batch_runs", wall_us}};

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
  rep.config = {{"dataset_samples", data->size()}};
  rep.results = {result, wake_result};
  rep.goals.push_back({"handoff_us (steady state)", "<", goal_handoff_us, *result.handoff_us,
                       statistic::median_of_repeats});
  return rep;
}

}  // namespace gpufeed::bench
