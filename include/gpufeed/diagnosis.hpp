#pragma once
/// @file
/// @brief Which stage limits the training loop, from a loader's statistics, in one sentence.
///
/// @code
/// auto const d = gpufeed::diagnose(loader.snapshot());
/// if (d.kind != gpufeed::bottleneck::gpu_bound) {
///   std::cerr << d.sentence << '\n';  // names the bottleneck, its evidence, and the fix
/// }
/// @endcode
///
/// diagnose() is a pure function of the statistics: call it on any snapshot, from any thread.
/// The stall and the time between batches are taken since the first batch (the ring filling at
/// start-up is left out); the workers' fractions are over the whole run. It never changes
/// anything: every fix it names is a suggestion.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "gpufeed/stats.hpp"

namespace gpufeed {

/// @brief What limits the pace of the training loop.
enum class bottleneck : std::uint8_t {
  not_enough_data,   ///< fewer than `diagnosis_min_batches` batches since the first
  gpu_bound,         ///< the consumer (training step) sets the pace; the loader keeps up
  input_bound,       ///< the workers cannot read and decode samples fast enough
  copy_bound,        ///< the host-to-device copies (or GPU transforms) cannot keep up
  ring_too_shallow,  ///< workers idle for want of a free slot while the consumer waits
  unknown,           ///< the consumer waits, but no stage stands out
  /// Python worker threads hold the interpreter's lock (the GIL) that the training loop needs:
  /// judged by the Python package, which sees the lock (the core never returns it).
  gil_bound,
};

/// @brief The name of a bottleneck kind, as in the enum (e.g. "input_bound").
[[nodiscard]] char const* to_string(bottleneck kind) noexcept;

/// @brief GPU utilization over a window, e.g. from NVML (`nvidia-smi`'s "GPU-Util").
struct gpu_utilization {
  double mean_percent = 0;  ///< mean utilization over the window, 0 .. 100
  double window_s = 0;      ///< the window's length (0: unknown)
};

/// @brief The verdict: a kind, and one sentence with the evidence (figures) and the fix.
struct diagnosis {
  bottleneck kind = bottleneck::not_enough_data;
  std::string sentence;
};

/// Batches after the first that diagnose() needs before it judges.
inline constexpr std::uint64_t diagnosis_min_batches = 8;
/// Below this steady-state stall fraction the loader is not the bottleneck.
inline constexpr double diagnosis_stall_threshold = 0.01;
/// next() waits needed before their p99 is read as bursts: among fewer, the first batch's
/// start-up wait is the p99 or above it.
inline constexpr std::uint64_t burst_min_waits = 200;

/// @brief Names the bottleneck of the run `s` describes.
///
/// Rules, in this order (stall = `steady_stall_fraction()`, since the first batch; batch period
/// = the wall time since the first batch / the batches after it; copy busy = the mean GPU time
/// of one timed copy plus its transforms / the batch period; over the whole run: busy =
/// `worker_busy_fraction()`, slot idle = `slot_wait_s / (workers x wall_s)`, copy idle =
/// `copy_wait_s / (workers x wall_s)`):
/// - fewer than `diagnosis_min_batches` batches after the first: `not_enough_data`;
/// - CUDA path and copy busy 80 % or more: `copy_bound`, whatever the stall (copies are
///   asynchronous: a saturated copy engine need not make next() wait);
/// - stall below 1 %: `gpu_bound` (the loader is not the problem; a larger batch could be
///   tried, never applied);
/// - CUDA path, and copy busy 50 % or more, or copy idle 25 % or more: `copy_bound` (send
///   uint8 and convert on the GPU, pinned staging, larger batches);
/// - workers busy reading 50 % or more of their time and idle for a slot under 25 %:
///   `input_bound` (more workers, caching, lighter decoding);
/// - workers idle for a free slot 25 % or more of their time, or waits in bursts (p99 of
///   next()'s wait at least 10x its median, over `burst_min_waits` waits or more) while
///   workers are busy under 50 %:
///   `ring_too_shallow` (raise `prefetch_depth`, release batches sooner);
/// - otherwise `unknown` (take a trace: `loader_options::trace_events`).
/// @param gpu utilization measured over the same run, when known: it sharpens the sentence.
[[nodiscard]] diagnosis diagnose(stats const& s, std::optional<gpu_utilization> gpu = std::nullopt);

/// @brief A warning when the GPU is underused, with the likely cause from diagnose().
/// @param utilization_percent GPU utilization samples (0 .. 100) over a recent window.
/// @param s the loader's statistics over (about) the same window.
/// @param threshold_percent warn when the samples' mean is below this.
/// @return nullopt when there are no samples or their mean reaches the threshold; else one
/// line: "GPU utilization averaged 12% over the last 30 samples (below 30%): " + the
/// diagnosis's sentence.
[[nodiscard]] std::optional<std::string> low_utilization_warning(
    std::span<double const> utilization_percent, stats const& s, double threshold_percent = 30.0);

}  // namespace gpufeed
