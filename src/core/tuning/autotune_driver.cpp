#include "core/tuning/autotune_driver.hpp"

#include <string>

#include "core/units.hpp"

namespace gpufeed::detail {

autotune_driver::autotune_driver(loader_options const& options, autotune_plan const& plan)
    : window_batches_{options.autotune.window_batches} {
  bool const tune_workers = options.workers == auto_workers;
  bool const tune_depth = options.prefetch_depth == auto_depth;
  if (tune_workers || tune_depth) {
    tuner_ = std::make_unique<autotuner>(
        autotune_bounds{tune_workers, tune_depth, plan.threads, plan.slots});
  }
}

std::optional<autotune_decision> autotune_driver::after_delivery(std::int64_t now,
                                                                 loader_metrics const& metrics,
                                                                 tuned_settings in_force) {
  bool const first = from_ns_ == 0;
  if (!first && ++batches_ < window_batches_) {
    return std::nullopt;
  }
  auto const totals = metrics.totals_now();
  std::optional<autotune_decision> d;
  if (!first) {
    autotune_window w;
    w.wall_s = seconds(now - from_ns_);
    w.consumer_wait_s = seconds(totals.consumer_wait_ns - from_.consumer_wait_ns);
    w.read_s = seconds(totals.read_ns - from_.read_ns);
    w.slot_wait_s = seconds(totals.slot_wait_ns - from_.slot_wait_ns);
    w.batches = batches_;
    w.workers = in_force.workers;
    w.depth = in_force.depth;
    d = tuner_->decide(w);
  }
  from_ns_ = now;  // the next window begins
  from_ = totals;
  batches_ = 0;
  if (!d || d->action == autotune_action::keep) {
    return std::nullopt;
  }
  return d;
}

std::string autotune_driver::change(tuned_settings before, tuned_settings after,
                                    std::string const& reason, std::uint64_t batches) {
  changes_.fetch_add(1, std::memory_order_relaxed);
  last_change_batch_.store(batches, std::memory_order_relaxed);
  std::string what;
  if (after.workers != before.workers) {
    what = "workers " + std::to_string(before.workers) + " -> " + std::to_string(after.workers);
  }
  if (after.depth != before.depth) {
    what += (what.empty() ? "" : ", ") + std::string{"prefetch_depth "} +
            std::to_string(before.depth) + " -> " + std::to_string(after.depth);
  }
  return "autotune at batch " + std::to_string(batches) + ": " + what + ": " + reason;
}

}  // namespace gpufeed::detail
