#include "overlap.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "bench_clock.hpp"
#include "cuda_device.hpp"
#include "gpufeed/cuda/device.hpp"
#include "gpufeed/cuda/stream.hpp"
#include "gpufeed/datasets/synthetic.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/observe/process.hpp"
#include "loader_pass.hpp"
#include "overlap_feed.hpp"
#include "summary_stats.hpp"
#include "synthetic_step.hpp"
#include "table.hpp"

namespace gpufeed::bench {
namespace {

constexpr double goal_stall = 0.01;
constexpr double goal_util = 0.99;
constexpr std::size_t feed_only_batches = 200;
constexpr double nvml_window_s = 1.0;  // NVML's longest utilization averaging period

std::size_t baseline_steps(overlap_config const& config) {
  return config.baseline_batches > 0 ? config.baseline_batches : config.common.batches;
}

// The system monitor of the timed steps: NVML's utilization of the measured GPU (found by its PCI
// bus id: CUDA and NVML number devices differently under CUDA_VISIBLE_DEVICES), every --sample-ms.
gpufeed::monitor_options sampling_for(overlap_config const& config,
                                      cuda_device_info const& device) {
  return {.interval = std::chrono::milliseconds{config.sample_ms},
          .history = std::size_t{1} << 20,
          .gpu_pci_bus_id = device.pci_bus_id,
          .low_utilization_window = std::chrono::milliseconds{0}};
}

feed_plan plan_for(overlap_config const& config, cuda_device_info const& device, std::size_t steps,
                   std::size_t queue_steps) {
  feed_plan plan;
  plan.sampling = sampling_for(config, device);
  plan.warmup = config.warmup;
  plan.warmup_s = nvml_window_s;
  // Each step lasts at least step_us and the host is at most queue_steps ahead: this many
  // steps always outlast warmup_s (the bound sizes the events, created up front).
  auto const covering = static_cast<std::size_t>(std::ceil(nvml_window_s * 1e6 / config.step_us));
  plan.max_warmup = std::max(config.warmup, covering + queue_steps + 1);
  plan.steps = steps;
  plan.queue_steps = queue_steps;
  return plan;
}

// Sized so that neither feed crosses an epoch end: each reads its samples in order from 0.
std::shared_ptr<gpufeed::synthetic const> make_dataset(overlap_config const& config) {
  auto const& common = config.common;
  std::size_t const warmup = plan_for(config, {}, 0, config.queue_steps).max_warmup;
  std::size_t const loader_batches =
      3 * common.prefetch_depth + feed_only_batches + warmup + common.batches + 1;
  std::size_t const batches = std::max(loader_batches, warmup + baseline_steps(config));
  auto spec = gpufeed::sample_spec{}.add("image", gpufeed::dtype::u8,
                                         {static_cast<std::int64_t>(config.sample_bytes)});
  auto const cost = std::chrono::nanoseconds{std::llround(config.sample_cost_us * 1e3)};
  return std::make_shared<gpufeed::synthetic>(
      batches * common.batch_size, std::move(spec),
      gpufeed::synthetic_options{.cpu_cost = cost, .write = true});
}

// What the loader alone supplies per batch (each released at once, no step): decides whether
// the step or the data bounds the loader-fed run, and so whether the goals apply.
double loader_seconds_per_batch(gpufeed::loader& source,
                                gpufeed::cuda::cuda_stream const& consumer) {
  consume(source, 2 * source.options().prefetch_depth);
  auto const start = bench_clock::now();
  consume(source, feed_only_batches);
  consumer.synchronize();
  return seconds_between(start, bench_clock::now()) / static_cast<double>(feed_only_batches);
}

bench_result to_result(std::string name, feed_run const& run) {
  auto const steps = run.gpu.step_us.size();
  auto const mean_util = run.utilization.mean_fraction();
  bench_result result;
  result.loader = std::move(name);
  result.samples_per_s = static_cast<double>(run.samples) / run.wall_s;
  result.batches_per_s = static_cast<double>(steps) / run.wall_s;
  result.bytes_per_s = static_cast<double>(run.bytes) / run.wall_s;
  result.details = {{"stall_fraction", ratio_or_zero(run.gpu.gaps_s, run.gpu.span_s)},
                    {"gpu_util", mean_util ? json(*mean_util) : json(nullptr)},
                    {"host_wait_fraction", ratio_or_zero(run.host_wait_s, run.wall_s)},
                    {"steps", steps},
                    {"wall_s", run.wall_s},
                    {"gpu_span_s", run.gpu.span_s},
                    {"step_us_median", median(run.gpu.step_us)},
                    {"step_us_p99", percentile(run.gpu.step_us, 99)},
                    {"max_gap_us", run.gpu.max_gap_s * 1e6},
                    {"gpu_util_samples", run.utilization.percent.size()},
                    {"gpu_util_failed_samples", run.utilization.failed}};
  return result;
}

std::string percent_or_dash(json const& fraction) {
  return fraction.is_number() ? format_fixed(100.0 * fraction.get<double>(), 2) + " %" : "-";
}

void print_summary(std::vector<bench_result> const& results, std::ostream& progress) {
  text_table table{{"feed", "steps/s", "stall", "GPU util (NVML)", "host wait", "step us (median)",
                    "max gap us"}};
  for (auto const& r : results) {
    auto const& d = r.details;
    table.add_row({r.loader, format_rate(*r.batches_per_s), percent_or_dash(d["stall_fraction"]),
                   percent_or_dash(d["gpu_util"]), percent_or_dash(d["host_wait_fraction"]),
                   format_fixed(d["step_us_median"].get<double>(), 1),
                   format_fixed(d["max_gap_us"].get<double>(), 1)});
  }
  progress << '\n';
  table.print(progress);
}

}  // namespace

CLI::App* add_overlap_command(CLI::App& app, overlap_config& config) {
  CLI::App* command = add_command(
      app,
      {.name = "overlap",
       .description = "CUDA path: a synthetic training step fed by the loader next to the same "
                      "step fed the usual way (read on the calling thread, blocking cudaMemcpy); "
                      "data-stall fraction and GPU utilization of each (needs a CUDA device)",
       .footer =
           "First the step with no feed (step_only): every step reads the same device buffer, the "
           "floor that the loop and its events leave between steps. Then the loader alone: " +
           std::to_string(feed_only_batches) +
           " batches released at once give its time per batch. Then the loader-fed run: a stream "
           "the bench owns is the loader's consumer stream; each step is next(), the step kernel "
           "on that stream reading field 0, release(). Then the usual loop on the legacy default "
           "stream: read batch-size samples on the calling thread into a pageable buffer, "
           "cudaMemcpy, the step kernel. The loader and the usual loop read the same synthetic "
           "dataset; every feed records CUDA events around every step. stall_fraction = idle time "
           "between consecutive steps / time from the first step's start to the last step's end "
           "(GPU clock; the steps' busy share is 1 minus it); gpu_util = the mean of NVML's "
           "utilization, which gpufeed::system_monitor samples every --sample-ms during the timed "
           "steps (null without NVML); host_wait_fraction = host time getting batches / host wall "
           "time. Goals, when the loader alone is faster than a step: stall_fraction < 0.01, "
           "gpu_util >= 0.99. Exits with status 1 when there is no CUDA device.",
       .batch_size = "Samples per batch (one batch per step)",
       .workers = "Loader worker threads (the usual loop reads on the calling thread alone)",
       .batches = "Timed steps fed by the loader (one batch each), after the warm-up"},
      config.common);
  add_value(*command, "--step-us", config.step_us,
            "Duration of one training step: a kernel on every SM that reads the whole batch, then "
            "spins on clock64 (calibrated with CUDA events)",
            "US")
      ->check(CLI::Range(50.0, 1e6));
  add_value(*command, "--sample-cost-us", config.sample_cost_us,
            "Busy CPU time of each sample read, both feeds (gpufeed::synthetic cpu_cost; the read "
            "also writes the sample's bytes). The loader needs about batch-size x (cost + write) / "
            "workers per batch: set it below or above --step-us",
            "US")
      ->check(CLI::Range(0.0, 1e6));
  add_value(*command, "--sample-bytes", config.sample_bytes, "Bytes per sample (one uint8 field)",
            "BYTES")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  add_value(*command, "--baseline-batches", config.baseline_batches,
            "Timed steps of the two references, the usual loop (slow by design) and the step with "
            "no feed; 0: --batches",
            "N");
  add_value(*command, "--warmup", config.warmup,
            "Untimed steps before each timed run (same loop, every feed); the warm-up also lasts "
            "at least 1 s, NVML's longest averaging period",
            "N");
  add_value(*command, "--queue-steps", config.queue_steps,
            "Steps the loader-fed host may have queued ahead of the GPU, as a training loop that "
            "reads its loss; 1 adds a launch gap to every step",
            "N")
      ->check(CLI::Range(std::size_t{1}, std::size_t{64}));
  add_value(*command, "--sample-ms", config.sample_ms,
            "Period of the NVML utilization sampling thread, in milliseconds", "MS")
      ->check(CLI::Range(10U, 10'000U));
  add_value(*command, "--device", config.device,
            "Index of the CUDA device to measure (as cudaSetDevice)", "N")
      ->check(CLI::NonNegativeNumber);
  return command;
}

report run_overlap(overlap_config const& config, std::ostream& progress) {
  auto const& common = config.common;
  auto const device = open_cuda_device(config.device);
  gpufeed::cuda::device_guard const guard{device.index};
  std::optional<unsigned> nvml_index;
  std::string nvml_reason;
  {
    gpufeed::system_monitor const probe{sampling_for(config, device)};
    nvml_index = probe.gpu_index();
    nvml_reason = probe.gpu_unavailable_reason();
  }
  synthetic_step const step{device, config.step_us};
  auto const data = make_dataset(config);
  progress << "overlap on " << device.name << " (" << device.pci_bus_id << "): step "
           << config.step_us << " us (" << step.cycles() << " cycles at "
           << format_fixed(step.cycles_per_us(), 1) << " per us), batch " << common.batch_size
           << " x " << format_bytes(config.sample_bytes) << ", " << config.sample_cost_us
           << " us CPU per sample, NVML "
           << (nvml_index ? "sampled every " + std::to_string(config.sample_ms) + " ms"
                          : "unavailable: " + nvml_reason)
           << '\n';

  gpufeed::cuda::cuda_stream const consumer;  // outlives the loader, which records on it
  gpufeed::loader_options options = to_loader_options(common);
  options.target = gpufeed::placement::cuda;
  options.device = device.index;
  options.consumer_stream = consumer.view();
  options.staging = gpufeed::staging_memory::pinned;

  // The floor first: the same loop over data that is already there.
  auto const step_only_run =
      run_resident_feed(common.batch_size * config.sample_bytes, consumer, step,
                        plan_for(config, device, baseline_steps(config), config.queue_steps));
  feed_run loader_run;
  double loader_batch_s = 0;
  std::size_t pinned = 0;
  {
    gpufeed::loader source{data, options};
    loader_batch_s = loader_seconds_per_batch(source, consumer);
    progress << "  loader alone: " << format_fixed(loader_batch_s * 1e6, 1)
             << " us per batch; gpufeed-fed steps: " << common.batches << '\n';
    loader_run = run_loader_feed(source, consumer, step,
                                 plan_for(config, device, common.batches, config.queue_steps));
    pinned = source.snapshot().pinned_bytes;
  }
  progress << "  usual loop (pageable + cudaMemcpy) steps: " << baseline_steps(config) << '\n';
  auto const baseline_run = run_pageable_feed(*data, common.batch_size, step,
                                              plan_for(config, device, baseline_steps(config), 1));

  bench_result loader_result = to_result("gpufeed", loader_run);
  loader_result.pinned_bytes = pinned;
  loader_result.peak_rss_bytes = gpufeed::observe::peak_rss_bytes();
  loader_result.details["loader_batch_us"] = loader_batch_s * 1e6;
  bench_result baseline_result = to_result("pageable_memcpy", baseline_run);
  bench_result step_only_result = to_result("step_only", step_only_run);
  step_only_result.samples_per_s.reset();  // it reads the same resident bytes every step
  step_only_result.bytes_per_s.reset();

  report rep;
  rep.machine.gpu = device.name;
  rep.results = {loader_result, baseline_result, step_only_result};
  print_summary(rep.results, progress);

  bool const goals_apply = loader_batch_s * 1e6 < config.step_us;
  if (goals_apply) {
    rep.goals.push_back({"gpufeed stall_fraction", "<", goal_stall,
                         loader_result.details["stall_fraction"].get<double>(),
                         statistic::one_run});
    if (auto const util = loader_run.utilization.mean_fraction()) {
      rep.goals.push_back({"gpufeed gpu_util", ">=", goal_util, *util, statistic::one_run});
    } else {
      progress << "gpu_util goal not checked: no NVML utilization samples\n";
    }
  } else {
    progress << "goals not checked: the loader alone needs "
             << format_fixed(loader_batch_s * 1e6, 1) << " us per batch, more than the "
             << config.step_us << " us step, so the data bounds the step by construction\n";
  }

  rep.config = {{"baseline_batches", baseline_steps(config)}};  // what the run used
  rep.config["step_cycles"] = step.cycles();
  rep.config["cycles_per_us"] = step.cycles_per_us();
  rep.config["goals_apply"] = goals_apply;
  rep.config["device"] = to_json(device);
  rep.config["nvml"] = {{"available", nvml_index.has_value()},
                        {"index", nvml_index ? json(*nvml_index) : json(nullptr)},
                        {"reason", nvml_reason}};
  return rep;
}

}  // namespace gpufeed::bench
