#pragma once
// The ways `overlap` feeds its training step:
//   - gpufeed's loader on the CUDA path: next() makes the step's stream wait for the copy;
//   - the usual loop: the calling thread reads the batch into pageable memory, copies it with a
//     blocking cudaMemcpy, then launches the step, all on the legacy default stream;
//   - no feed at all: every step reads one batch already in device memory, the floor that the
//     loop and its events alone leave between steps.
// All time the same way: host wall time, plus the steps' begin and end on the GPU (events), and
// NVML's utilization over the timed steps, sampled by the library's system monitor.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "gpufeed/cuda/stream.hpp"
#include "gpufeed/dataset.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/observe/monitor.hpp"
#include "step_timeline.hpp"
#include "synthetic_step.hpp"

namespace gpufeed::bench {

/// NVML's utilization of the GPU during a feed's timed steps.
struct utilization_samples {
  std::vector<double> percent;  ///< one per monitor sample that had a utilization
  std::size_t failed = 0;       ///< samples without one, where the monitor watches a GPU
  /// Mean utilization as a fraction (0-1); none without a successful sample.
  [[nodiscard]] std::optional<double> mean_fraction() const;
};

/// How a feed runs its steps.
struct feed_plan {
  /// Untimed steps first, the same loop: at least `warmup` steps and `warmup_s` seconds (so
  /// that NVML's averaging window holds nothing of what ran before), at most `max_warmup`.
  std::size_t warmup = 0;
  double warmup_s = 0;
  std::size_t max_warmup = 0;
  std::size_t steps = 0;        ///< timed steps
  std::size_t queue_steps = 2;  ///< steps the host may have queued ahead of the GPU
  /// The system monitor that samples the GPU over the timed steps (started after the warm-up).
  gpufeed::monitor_options sampling;
};

/// What one feed's timed steps gave.
struct feed_run {
  double wall_s = 0;       ///< host: first timed step to the synchronize after the last
  double host_wait_s = 0;  ///< host time spent obtaining each batch (next(); or read + copy)
  std::uint64_t samples = 0;
  std::uint64_t bytes = 0;
  step_summary gpu;
  utilization_samples utilization;  ///< sampled over the timed steps
};

/// Feeds `step` from `source`, whose consumer stream must be `consumer`.
[[nodiscard]] feed_run run_loader_feed(gpufeed::loader& source,
                                       gpufeed::cuda::cuda_stream const& consumer,
                                       synthetic_step const& step, feed_plan const& plan);

/// Runs `step` on `stream` over `bytes` of device memory that never change: no data to wait for.
[[nodiscard]] feed_run run_resident_feed(std::size_t bytes,
                                         gpufeed::cuda::cuda_stream const& stream,
                                         synthetic_step const& step, feed_plan const& plan);

/// Feeds `step` from `data` read on this thread, `batch_size` samples per step, in order.
[[nodiscard]] feed_run run_pageable_feed(gpufeed::dataset const& data, std::size_t batch_size,
                                         synthetic_step const& step, feed_plan const& plan);

}  // namespace gpufeed::bench
