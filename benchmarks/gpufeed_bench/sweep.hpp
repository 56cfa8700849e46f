#pragma once
// `gpufeed-bench sweep`: the loader over a grid of workers x prefetch_depth x batch_size on one
// dataset, optionally with a synthetic training step between next() and release(), so that the
// stall fraction (the consumer's time blocked in next()) says which settings keep a step fed.
// Reports each cell's median samples/s, bytes/s and stall fraction, marks the best cell, and
// can draw the grid as an SVG chart (sweep_svg.hpp).

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "dataset_options.hpp"
#include "json_report.hpp"

namespace CLI {
class App;
}

namespace gpufeed::bench {

struct sweep_config {
  std::vector<unsigned> workers = {1, 2, 4};
  std::vector<std::size_t> depths = {1, 2, 4, 8};
  std::vector<std::size_t> batch_sizes = {32, 128};
  dataset_options input{.samples = 10'000};  ///< what the loader reads, in which order
  double step_us = 0;               ///< consumer step per batch, between next() and release()
  double step_us_per_sample = 0;    ///< added to the step per sample of the batch
  std::string step_mode = "sleep";  ///< sleep (a GPU step: the thread waits) | spin (a CPU step)
  std::size_t repeats = 3;          ///< rounds over the whole grid; medians reported
  std::size_t warmup = 8;           ///< untimed batches before each timed run
  double run_ms = 250;              ///< timed span of each run (whole batches, at least 2)
  std::string json_path;            ///< empty: no JSON file
  std::string svg_path;             ///< empty: no chart
  bool verbose = false;
  /// Also run one row per batch size with workers = auto_workers, prefetch_depth = auto_depth
  /// (chosen_by "auto"), reported with its ratio to the best grid cell of its batch size.
  bool auto_rows = false;
  /// The auto rows' autotune_options::max_workers (0: the library's default, the core count).
  unsigned auto_max_workers = 0;
};

/// Registers the `sweep` subcommand and its flags, which write into `config`.
CLI::App* add_sweep_command(CLI::App& app, sweep_config& config);

/// Runs the grid, printing one line per run to `progress`, then the grid table; writes the SVG
/// chart when `config.svg_path` is set.
/// @throws std::exception on bad settings, a loader error, or an SVG file that cannot be written.
[[nodiscard]] report run_sweep(sweep_config const& config, std::ostream& progress);

}  // namespace gpufeed::bench
