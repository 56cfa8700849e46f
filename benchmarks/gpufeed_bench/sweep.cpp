#include "sweep.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>

#include "bench_clock.hpp"
#include "common_options.hpp"
#include "compare_dataset.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/observe/process.hpp"
#include "loader_pass.hpp"
#include "machine_info.hpp"
#include "summary_stats.hpp"
#include "sweep_svg.hpp"
#include "table.hpp"

namespace gpufeed::bench {
namespace {

// What one timed run of one row delivered, and the loader's statistics around it (for an auto
// row, `after` holds the settings the tuner ended on, its changes and the batch of its last).
struct cell_run {
  double seconds = 0;
  double wait_s = 0;  // consumer time blocked in next(), epoch ends included
  double step_s = 0;  // consumer time in the synthetic step (what it really took)
  std::uint64_t batches = 0;
  std::uint64_t samples = 0;
  std::uint64_t epoch_ends = 0;
  gpufeed::stats before;
  gpufeed::stats after;
};

// One row of the sweep: loader settings, measured as a unit. The grid's cells are rows with
// cell.chosen_by = "grid". --auto adds one row per batch size whose options come from the
// autotuner (workers = auto, prefetch_depth = auto) and whose cell.chosen_by is "auto" (the
// cell then holds the settings the tuner chose, read back after the run). Such a row is
// measured interleaved with the grid, summarized, printed and charted like a grid cell, never
// chosen as "best", and gets ratio = its samples/s / the best grid cell's of its batch size
// (see mark_best).
struct sweep_row {
  grid_cell cell;
  gpufeed::loader_options options;
  std::vector<cell_run> runs;
};

gpufeed::loader_options row_options(sweep_config const& config, std::size_t batch_size,
                                    unsigned workers, std::size_t depth) {
  gpufeed::loader_options options;
  options.batch_size = batch_size;
  options.workers = workers;
  options.prefetch_depth = depth;
  apply_order(config.input, options);
  options.rank = 0U;
  options.world_size = 1U;
  return options;
}

// A fresh loader; `warmup` untimed batches, then batches until `run_ms` has passed (at least 2),
// each taken with next(), held for the step, then released.
cell_run measure_row(std::shared_ptr<gpufeed::dataset const> const& data,
                     gpufeed::loader_options const& options, sweep_config const& config) {
  gpufeed::loader source{data, options};
  auto const step = std::chrono::nanoseconds{
      std::llround(1000.0 * (config.step_us +
                             config.step_us_per_sample * static_cast<double>(options.batch_size)))};
  bool const spin = config.step_mode == "spin";
  auto const run_length = std::chrono::duration<double, std::milli>{config.run_ms};

  cell_run run;
  std::size_t warm = 0;
  bench_clock::time_point start{};
  bool timing = false;
  while (true) {
    if (!timing && warm >= config.warmup) {
      timing = true;
      run.before = source.snapshot();
      start = bench_clock::now();
    }
    if (timing && run.batches >= 2 && bench_clock::now() - start >= run_length) break;
    auto const t0 = bench_clock::now();
    std::uint64_t epoch_ends = 0;
    auto batch = next_batch(source, &epoch_ends);
    auto const t1 = bench_clock::now();
    if (timing) {
      run.wait_s += seconds_between(t0, t1);
      run.epoch_ends += epoch_ends;
    }
    run_step(step, spin);
    auto const t2 = bench_clock::now();
    auto const samples = batch.size();
    batch.release();
    if (!timing) {
      ++warm;
      continue;
    }
    run.step_s += seconds_between(t1, t2);
    run.samples += samples;
    ++run.batches;
  }
  run.seconds = seconds_between(start, bench_clock::now());
  run.after = source.snapshot();
  return run;
}

// One figure of each run.
template <class F>
auto per_run(std::vector<cell_run> const& runs, F figure) {
  std::vector<std::invoke_result_t<F, cell_run const&>> out;
  for (auto const& run : runs) out.push_back(figure(run));
  return out;
}

bench_result summarize(sweep_row const& row, std::size_t bytes_per_sample) {
  auto const& runs = row.runs;
  auto const workers = static_cast<double>(std::max(1U, row.cell.workers));
  auto const share = [&](double gpufeed::stats::*counter, double threads) {
    return per_run(runs, [&](cell_run const& r) {
      return ratio_or_zero(r.after.*counter - r.before.*counter, r.seconds * threads);
    });
  };
  auto const sps = per_run(runs, [](cell_run const& r) {
    return ratio_or_zero(static_cast<double>(r.samples), r.seconds);
  });
  auto const stall =
      per_run(runs, [](cell_run const& r) { return ratio_or_zero(r.wait_s, r.seconds); });
  auto const step_us = per_run(runs, [](cell_run const& r) {
    return 1e6 * ratio_or_zero(r.step_s, static_cast<double>(r.batches));
  });
  std::uint64_t epoch_ends = 0;
  for (auto const& run : runs) epoch_ends += run.epoch_ends;

  bench_result result;
  result.loader = "gpufeed";
  result.cell = row.cell;
  double const median_sps = median(sps);
  result.samples_per_s = median_sps;
  result.batches_per_s = median_sps / static_cast<double>(row.cell.batch_size);
  result.bytes_per_s = median_sps * static_cast<double>(bytes_per_sample);
  result.pinned_bytes = runs.empty() ? 0 : runs.back().after.pinned_bytes;
  result.skipped = 0;
  result.details = {
      {"stall_fraction", median(stall)},
      {"stall_fraction_runs", stall},
      {"samples_per_s_runs", sps},
      {"samples_per_s_min", sps.empty() ? 0.0 : *std::min_element(sps.begin(), sps.end())},
      {"samples_per_s_max", sps.empty() ? 0.0 : *std::max_element(sps.begin(), sps.end())},
      // The median over the runs of each run's mean step (the key predates the median).
      {"step_us_mean", median(step_us)},
      {"worker_read_fraction", median(share(&gpufeed::stats::read_s, workers))},
      {"worker_slot_wait_fraction", median(share(&gpufeed::stats::slot_wait_s, workers))},
      {"batches_runs", per_run(runs, [](cell_run const& r) { return r.batches; })},
      {"epoch_ends_crossed", epoch_ends},
      {"ring_host_bytes", runs.empty() ? 0 : runs.back().after.host_bytes},
      {"best", false},
      {"best_for_batch_size", false}};
  if (row.cell.chosen_by == "auto") {
    auto const last_change =
        per_run(runs, [](cell_run const& r) { return r.after.autotune_last_change_batch; });
    result.details.update(
        {{"autotune_workers_runs",
          per_run(runs, [](cell_run const& r) { return r.after.workers; })},
         {"autotune_depth_runs",
          per_run(runs, [](cell_run const& r) { return r.after.ring_slots; })},
         {"autotune_changes_runs",
          per_run(runs, [](cell_run const& r) { return r.after.autotune_changes; })},
         {"autotune_last_change_batch_runs", last_change},
         {"autotune_last_change_batch_max",
          last_change.empty() ? 0 : *std::max_element(last_change.begin(), last_change.end())},
         {"autotune_note",
          "workers = auto_workers, prefetch_depth = auto_depth from a fresh loader each run; the "
          "cell's workers and depth are the last run's final choice; batches count from the "
          "loader's first (warm-up included), and the timed span includes the tuning"}});
  }
  return result;
}

// Marks the best grid cell overall and per batch size (most samples/s); rows not chosen by the
// grid (--auto) get ratio = their samples/s / the best grid cell's of their batch size.
void mark_best(std::vector<bench_result>& results) {
  std::map<std::size_t, std::size_t> best_for_batch;
  std::optional<std::size_t> best;
  auto const sps = [&](std::size_t i) { return results[i].samples_per_s.value_or(0.0); };
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto const& cell = *results[i].cell;
    if (!cell.from_grid()) continue;
    auto const [at, added] = best_for_batch.try_emplace(cell.batch_size, i);
    if (!added && sps(i) > sps(at->second)) at->second = i;
    if (!best || sps(i) > sps(*best)) best = i;
  }
  for (auto const& [batch_size, i] : best_for_batch) {
    results[i].details["best_for_batch_size"] = true;
  }
  if (best) results[*best].details["best"] = true;
  for (auto& result : results) {
    if (result.cell->from_grid()) continue;
    auto const at = best_for_batch.find(result.cell->batch_size);
    if (at == best_for_batch.end() || sps(at->second) <= 0) continue;
    result.ratio = result.samples_per_s.value_or(0.0) / sps(at->second);
    result.details["ratio_meaning"] = "samples_per_s / the best grid cell's of this batch size";
  }
}

std::string step_text(sweep_config const& config) {
  if (config.step_us <= 0 && config.step_us_per_sample <= 0) return "no step";
  std::string text = format_fixed(config.step_us, 0) + " us";
  if (config.step_us_per_sample > 0) {
    text += " + " + format_fixed(config.step_us_per_sample, 2) + " us/sample";
  }
  return text + " " + config.step_mode + " step";
}

}  // namespace

CLI::App* add_sweep_command(CLI::App& app, sweep_config& config) {
  CLI::App* command = add_command(
      app, {.name = "sweep",
            .description =
                "The loader over a grid of workers x prefetch depth x batch size on one dataset, "
                "with an optional synthetic training step: samples/s, bytes/s and stall fraction "
                "of every cell, the best cell marked, a table, JSON and an SVG chart",
            .footer = "Each repeat runs every cell once (batch size, then depth, then workers), "
                      "each on a fresh gpufeed::loader: --warmup untimed batches, then batches for "
                      "--run-ms. The consumer takes a batch with next(), holds it for the step "
                      "(--step-us + --step-us-per-sample x batch size), then releases it. "
                      "samples/s = timed samples / timed wall time; stall fraction = time blocked "
                      "in next() / timed wall time (with no step the consumer always waits, so it "
                      "is close to 1). Each cell reports medians over the repeats; the best cell "
                      "(most samples/s) is marked '*' and the best of each batch size '+'."});
  add_list(*command, "--workers", config.workers,
           "Worker thread counts of the grid, comma-separated (loader_options::workers)", "N,...")
      ->check(CLI::Range(1U, 1024U));
  add_list(*command, "--depths", config.depths,
           "Prefetch depths of the grid, comma-separated: ring slots, leases included "
           "(loader_options::prefetch_depth)",
           "N,...")
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}));
  add_list(*command, "--batch-sizes", config.batch_sizes,
           "Batch sizes of the grid in samples, comma-separated; one chart panel each", "N,...")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
  add_dataset_options(*command, config.input);
  add_value(*command, "--step-us", config.step_us,
            "Synthetic training step per batch, in microseconds: the consumer holds each batch "
            "this long between next() and release() (0: release at once)",
            "US")
      ->check(CLI::Range(0.0, 1e7));
  add_value(*command, "--step-us-per-sample", config.step_us_per_sample,
            "Added to the step per sample of the batch, in microseconds, so that the step grows "
            "with the batch size as a real one does",
            "US")
      ->check(CLI::Range(0.0, 1e6));
  add_choice(*command, "--step-mode", config.step_mode,
             "sleep: the consumer thread sleeps through the step (a GPU step; the core is free "
             "for workers); spin: it busy-waits (a CPU step competing for cores)",
             "MODE", {"sleep", "spin"});
  add_repeat_options(*command, config.repeats,
                     "Rounds over the whole grid (each cell once per round, a fresh loader per "
                     "run); the report gives each cell's medians",
                     config.warmup, "Untimed batches before each timed run (steps included)");
  add_value(
      *command, "--run-ms", config.run_ms,
      "Timed span of each run in milliseconds: batches are taken until it has passed (at least 2)",
      "MS")
      ->check(CLI::Range(1.0, 1e7));
  add_output_options(*command, config.json_path, config.verbose);
  command
      ->add_option("--svg", config.svg_path,
                   "Also draw the grid as an SVG chart to FILE: samples/s and stall fraction vs "
                   "workers, one line per prefetch depth, one panel per batch size (default: "
                   "none)")
      ->type_name("FILE");
  command->add_flag("--auto", config.auto_rows,
                    "Also run workers = auto, prefetch_depth = auto once per batch size (a fresh "
                    "loader each run, tuning inside the timed span) and report its samples/s, its "
                    "ratio to the best grid cell of that batch size, its final settings and the "
                    "batch of its last change");
  add_value(*command, "--auto-max-workers", config.auto_max_workers,
            "With --auto: the most workers the autotuner may use (0: the library's default, the "
            "core count; more helps reads that wait, see --wait-us)",
            "N")
      ->check(CLI::Range(0U, 1024U));
  return command;
}

report run_sweep(sweep_config const& config, std::ostream& progress) {
  if (config.workers.empty() || config.depths.empty() || config.batch_sizes.empty()) {
    throw std::invalid_argument{"--workers, --depths and --batch-sizes each need a value"};
  }
  auto const& input = config.input;
  auto const data = make_compare_dataset(parse_dataset(input.dataset), input);
  std::size_t const bytes_per_sample = data.data->spec().bytes_per_sample();

  // Rows are filled in place: from a braced temporary, GCC 12 at -O3 warns (wrongly,
  // maybe-uninitialized) about the string in its cell.
  std::vector<sweep_row> rows;
  for (auto const batch_size : config.batch_sizes) {
    for (auto const depth : config.depths) {
      for (auto const workers : config.workers) {
        auto& row = rows.emplace_back();
        row.cell = {batch_size, workers, depth, "grid"};
        row.options = row_options(config, batch_size, workers, depth);
      }
    }
  }
  if (config.auto_rows) {
    for (auto const batch_size : config.batch_sizes) {
      auto& row = rows.emplace_back();
      row.cell = {batch_size, 0, 0, "auto"};
      row.options = row_options(config, batch_size, gpufeed::auto_workers, gpufeed::auto_depth);
      row.options.autotune.max_workers = config.auto_max_workers;
    }
  }

  progress << "sweep: " << input.dataset << " (" << data.data->spec().to_string() << ", "
           << data.data->size() << " samples), " << rows.size() << " cells x " << config.repeats
           << " repeats of " << format_fixed(config.run_ms, 0) << " ms, " << step_text(config)
           << '\n';
  for (std::size_t r = 0; r < config.repeats; ++r) {
    for (auto& row : rows) {
      row.runs.push_back(measure_row(data.data, row.options, config));
      auto const& run = row.runs.back();
      bool const tuned = row.cell.chosen_by == "auto";
      progress << "  repeat " << r + 1 << '/' << config.repeats << ": batch " << row.cell.batch_size
               << (tuned ? " auto: depth " + std::to_string(run.after.ring_slots) + " workers " +
                               std::to_string(run.after.workers)
                         : " depth " + std::to_string(row.cell.prefetch_depth) + " workers " +
                               std::to_string(row.cell.workers))
               << ": " << format_rate(ratio_or_zero(static_cast<double>(run.samples), run.seconds))
               << " samples, stall "
               << format_fixed(100.0 * ratio_or_zero(run.wait_s, run.seconds), 1) << " %";
      if (tuned) {
        progress << ", " << run.after.autotune_changes << " changes, last at batch "
                 << run.after.autotune_last_change_batch;
      }
      progress << '\n';
      if (tuned) {  // the cell shows what the tuner chose (the last run's)
        row.cell.workers = run.after.workers;
        row.cell.prefetch_depth = run.after.ring_slots;
      }
    }
  }

  report rep;
  for (auto const& row : rows) rep.results.push_back(summarize(row, bytes_per_sample));
  mark_best(rep.results);
  if (!rep.results.empty()) rep.results.front().peak_rss_bytes = gpufeed::observe::peak_rss_bytes();

  rep.config = {{"chunk_window", effective_chunk_window(input)},  // 0 unless chunk-aware
                {"dataset_info", data.description},
                {"bytes_per_sample", bytes_per_sample}};

  if (!config.svg_path.empty()) {
    sweep_chart chart;
    auto const machine = detect_machine();
    chart.title = "gpufeed-bench sweep: " + input.dataset + ", " + step_text(config);
    chart.subtitle = {data.data->spec().to_string() + ", read cost " +
                          format_fixed(input.cpu_cost_us, 0) + " us CPU + " +
                          format_fixed(input.wait_us, 0) + " us wait per sample; median of " +
                          std::to_string(config.repeats) + " runs of " +
                          format_fixed(config.run_ms, 0) + " ms per cell, bars from min to max",
                      std::to_string(machine.cpus) + " CPUs" +
                          (machine.cpu_model.empty() ? "" : " (" + machine.cpu_model + ")") +
                          ", load " + format_fixed(machine.load_average[0], 1) + " at the end, " +
                          utc_now("%Y-%m-%d %H:%M UTC")};
    for (auto const& result : rep.results) {
      sweep_point point;
      point.cell = *result.cell;
      point.samples_per_s = result.samples_per_s.value_or(0.0);
      point.samples_per_s_min = result.details.value("samples_per_s_min", 0.0);
      point.samples_per_s_max = result.details.value("samples_per_s_max", 0.0);
      point.stall_fraction = result.details.value("stall_fraction", 0.0);
      point.best = result.details.value("best", false);
      chart.points.push_back(point);
    }
    write_sweep_svg(chart, config.svg_path);
    progress << "wrote " << config.svg_path << '\n';
  }
  return rep;
}

}  // namespace gpufeed::bench
