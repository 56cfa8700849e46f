#pragma once
// The autotuner's decisions (loader_options::workers = auto_workers, prefetch_depth =
// auto_depth), as a pure function of what the loader measured over one window of batches, so
// that they can be tested without threads. autotune_driver.hpp feeds it from next(), and the loader
// applies what it decides; see docs/tuning.md, "Autotuning".

#include <cstddef>
#include <cstdint>
#include <string>

#include "gpufeed/options.hpp"

namespace gpufeed::detail {

/// What the loader measured over one window (since the previous decision).
struct autotune_window {
  double wall_s = 0;           // the window's length
  double consumer_wait_s = 0;  // next() blocked waiting for a batch
  double read_s = 0;           // inside dataset::read, summed over the workers
  double slot_wait_s = 0;      // workers idle because no slot (within the active depth) was free
  std::uint64_t batches = 0;   // delivered in the window
  unsigned workers = 1;        // active workers during the window
  std::size_t depth = 1;       // active ring slots during the window
};

/// What the tuner may change, and how far.
struct autotune_bounds {
  bool tune_workers = false;
  bool tune_depth = false;
  unsigned max_workers = 1;   // worker threads started
  std::size_t max_depth = 1;  // ring slots allocated
};

/// The thresholds of the rules (fractions of the window, or of the active workers' time).
struct autotune_thresholds {
  double stall = 0.01;             // the consumer stalled: it waited more than this
  double calm_stall = 0.002;       // a calm window: it waited less than this
  double busy = 0.75;              // the workers are the bottleneck: they read more than this
  double spare_busy = 0.5;         // one worker fewer would still read less than this
  unsigned calm_windows = 4;       // calm windows in a row before a worker is given back
  unsigned max_calm_windows = 64;  // the back-off's ceiling
};

enum class autotune_action : std::uint8_t { keep, add_workers, add_slot, remove_worker };

/// One decision: what to do, the settings after it, and why (a sentence with the numbers).
struct autotune_decision {
  autotune_action action = autotune_action::keep;
  unsigned workers = 1;
  std::size_t depth = 1;
  std::string reason;
};

/// The controller. decide() is a pure function of the window and of a little hysteresis state
/// (calm windows seen, and a back-off that grows when giving a worker back caused a stall).
class autotuner {
 public:
  explicit autotuner(autotune_bounds bounds, autotune_thresholds thresholds = {});

  /// The decision for one window. Not thread-safe; only the consumer thread calls it.
  [[nodiscard]] autotune_decision decide(autotune_window const& window);

  [[nodiscard]] autotune_bounds const& bounds() const noexcept { return bounds_; }
  /// Calm windows in a row needed before a worker is given back (grows after a bad removal).
  [[nodiscard]] unsigned calm_windows_needed() const noexcept { return calm_needed_; }

 private:
  autotune_bounds bounds_;
  autotune_thresholds thresholds_;
  unsigned calm_ = 0;
  unsigned calm_needed_;
  unsigned since_removal_ = 0;  // windows since a worker was given back; 0: none recently
};

/// The starting point and the bounds for `options` (workers and/or prefetch_depth = auto).
struct autotune_plan {
  unsigned threads = 1;          // worker threads to start
  unsigned start_workers = 1;    // active at first
  std::size_t slots = 1;         // ring slots to allocate
  std::size_t start_depth = 1;   // active at first
  std::size_t budget_bytes = 0;  // the memory budget the slots were sized by (auto depth)
};

/// The worker threads `workers = auto_workers` starts (the most the tuner may use):
/// `autotune.max_workers`, or the usable cores (the affinity mask), at most 64. Python's loader
/// starts this many worker processes when it lets gpufeed choose.
[[nodiscard]] unsigned auto_worker_threads(autotune_options const& autotune) noexcept;

/// Resolves the automatic settings: threads = auto_worker_threads(); slots =
/// min(autotune.max_depth, budget / slot_bytes) with budget = autotune.memory_budget or
/// default_memory_budget() (and, on the CUDA path, the pinned budget). Manual settings are passed
/// through unchanged.
[[nodiscard]] autotune_plan plan_autotune(loader_options const& options, std::size_t slot_bytes);

/// The default memory budget of an automatic ring: 1/8 of physical memory, at most 4 GiB
/// (256 MiB when the physical memory is unknown).
[[nodiscard]] std::size_t default_memory_budget() noexcept;

}  // namespace gpufeed::detail
