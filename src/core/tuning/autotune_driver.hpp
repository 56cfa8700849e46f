#pragma once
// Drives the autotuner (autotuner.hpp) from next(): it keeps the window of deliveries since the
// last decision, asks for a decision every autotune.window_batches deliveries, and words each
// change for the log. The consumer thread calls it, with no lock held; applying a change (the
// active workers, the ring's depth) is the loader's, under its mutex.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/metrics/loader_metrics.hpp"
#include "core/tuning/autotuner.hpp"
#include "gpufeed/options.hpp"

namespace gpufeed::detail {

/// Active workers and ring depth.
struct tuned_settings {
  unsigned workers = 1;
  std::size_t depth = 1;
};

class autotune_driver {
 public:
  /// Tunes what `options` leaves automatic (workers and/or prefetch_depth), within `plan`;
  /// nothing when both are manual.
  autotune_driver(loader_options const& options, autotune_plan const& plan);

  [[nodiscard]] bool enabled() const noexcept { return tuner_ != nullptr; }
  /// Whether it may deepen the ring (prefetch_depth = auto_depth).
  [[nodiscard]] bool tunes_depth() const noexcept { return tuner_ && tuner_->bounds().tune_depth; }

  /// After a delivery at `now` (steady_ns()), with the settings in force: every
  /// autotune.window_batches deliveries it decides from what `metrics` measured over the window
  /// (read only then). Returns the decision when it changes something. The first delivery only
  /// opens the first window, so that the start-up fill is left out of every one.
  [[nodiscard]] std::optional<autotune_decision> after_delivery(std::int64_t now,
                                                                loader_metrics const& metrics,
                                                                tuned_settings in_force);
  /// Counts a change from `before` to `after` (applied by the caller), made at `batches`
  /// delivered, and returns its log line.
  [[nodiscard]] std::string change(tuned_settings before, tuned_settings after,
                                   std::string const& reason, std::uint64_t batches);

  [[nodiscard]] std::uint64_t changes() const noexcept {
    return changes_.load(std::memory_order_relaxed);
  }
  /// Batches delivered at the last change (0: none yet).
  [[nodiscard]] std::uint64_t last_change_batch() const noexcept {
    return last_change_batch_.load(std::memory_order_relaxed);
  }

 private:
  std::size_t window_batches_;
  std::unique_ptr<autotuner> tuner_;  // null unless workers or prefetch_depth is automatic
  // The window: where it began (steady_ns(); 0 until the first delivery) and the totals then.
  std::int64_t from_ns_ = 0;
  loader_metrics::totals from_{};
  std::uint64_t batches_ = 0;
  std::atomic<std::uint64_t> changes_{0};  // read by snapshots
  std::atomic<std::uint64_t> last_change_batch_{0};
};

}  // namespace gpufeed::detail
