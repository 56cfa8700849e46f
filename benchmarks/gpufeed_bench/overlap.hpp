#pragma once
// `gpufeed-bench overlap`: a synthetic training step (a kernel of set duration that reads its
// batch) fed by the loader on the CUDA path, next to the same step fed the usual way (the
// calling thread reads the batch into pageable memory, cudaMemcpy, then the step), and the step
// with no feed at all (the measurement's floor). Reports the data-stall fraction, the GPU's busy
// fraction (events) and its utilization (NVML).
// Goal, when the loader alone needs less time per batch than a step: stall under 1 % and GPU
// utilization at least 99 %.

#include <cstddef>
#include <iosfwd>

#include "common_options.hpp"
#include "json_report.hpp"

namespace CLI {
class App;
}

namespace gpufeed::bench {

struct overlap_config {
  common_options common{.workers = 8};       ///< --batches: timed steps fed by the loader
  double step_us = 2000;                     ///< duration of one step's kernel
  double sample_cost_us = 100;               ///< busy CPU time per sample read (both feeds)
  std::size_t sample_bytes = 224 * 224 * 3;  ///< one uint8 image per sample
  std::size_t baseline_batches = 300;        ///< timed steps of each reference feed; 0: --batches
  std::size_t warmup = 50;                   ///< untimed steps before each timed run
  std::size_t queue_steps = 2;               ///< steps the host may queue ahead of the GPU
  unsigned sample_ms = 100;                  ///< NVML sampling period
  int device = 0;
};

/// Registers the `overlap` subcommand and its flags, which write into `config`.
CLI::App* add_overlap_command(CLI::App& app, overlap_config& config);

/// Runs the benchmark, printing a line per phase to `progress`.
/// @throws std::runtime_error "no CUDA device: ..." without a device; std::exception on bad
/// settings or a loader error.
[[nodiscard]] report run_overlap(overlap_config const& config, std::ostream& progress);

}  // namespace gpufeed::bench
