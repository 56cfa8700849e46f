#include "core/tuning/autotuner.hpp"

#include "core/host_resources.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpufeed::detail {

namespace {
constexpr unsigned max_default_workers = 64;
constexpr std::size_t gib = std::size_t{1} << 30;

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f%%", 100.0 * fraction);
  return text;
}

double ratio(double a, double b) noexcept {
  return b > 0 ? a / b : 0.0;
}
}  // namespace

autotuner::autotuner(autotune_bounds bounds, autotune_thresholds thresholds)
    : bounds_{bounds}, thresholds_{thresholds}, calm_needed_{thresholds.calm_windows} {}

autotune_decision autotuner::decide(autotune_window const& w) {
  autotune_decision d;
  d.workers = w.workers;
  d.depth = w.depth;
  if (w.wall_s <= 0 || w.workers == 0) {
    return d;
  }
  auto const stall = ratio(w.consumer_wait_s, w.wall_s);
  auto const worker_time = static_cast<double>(w.workers) * w.wall_s;
  auto const busy = ratio(w.read_s, worker_time);
  auto const slot_idle = ratio(w.slot_wait_s, worker_time);
  // The reason's numbers, built only for a decision that changes something (most windows keep).
  auto const numbers = [&] {
    return "stall " + percent(stall) + " over " + std::to_string(w.batches) + " batches, " +
           std::to_string(w.workers) + " workers " + percent(busy) + " busy reading, " +
           percent(slot_idle) + " waiting for a free slot, depth " + std::to_string(w.depth);
  };
  bool const can_add_worker = bounds_.tune_workers && w.workers < bounds_.max_workers;
  bool const can_add_slot = bounds_.tune_depth && w.depth < bounds_.max_depth;

  if (stall > thresholds_.stall) {
    calm_ = 0;
    if (since_removal_ > 0) {
      // Giving a worker back brought the stall back: wait longer before trying again.
      calm_needed_ = std::min(calm_needed_ * 2, thresholds_.max_calm_windows);
      since_removal_ = 0;
    }
    if (can_add_worker && busy >= thresholds_.busy) {
      // Reading is the bottleneck. Workers needed to feed the consumer without a stall: the
      // read time per second it would take unstalled, plus 10 % headroom; at most doubled.
      auto const unstalled = std::max(w.wall_s - w.consumer_wait_s, 0.05 * w.wall_s);
      auto const needed = static_cast<unsigned>(std::ceil(1.1 * w.read_s / unstalled));
      auto const step = std::clamp(needed > w.workers ? needed - w.workers : 1U, 1U, w.workers);
      d.workers = std::min(bounds_.max_workers, w.workers + step);
      d.action = autotune_action::add_workers;
      d.reason = "the consumer stalled and the workers were busy (" + numbers() + ")";
      return d;
    }
    if (busy >= thresholds_.busy) {
      // Input-bound with every worker the bounds allow: a deeper ring cannot make reading
      // faster, it would only take memory (the diagnosis names the fix: lighter reads).
      return d;
    }
    if (can_add_slot) {
      d.depth = w.depth + 1;
      d.action = autotune_action::add_slot;
      d.reason = "the consumer stalled while the workers were idle: its demand is bursty (" +
                 numbers() + ")";
      return d;
    }
    if (can_add_worker) {
      d.workers = w.workers + 1;
      d.action = autotune_action::add_workers;
      d.reason = "the consumer stalled and the ring is at its largest depth (" + numbers() + ")";
      return d;
    }
    return d;  // at the bounds: nothing left to add
  }

  if (since_removal_ > 0 && ++since_removal_ > 2) {
    since_removal_ = 0;  // the removal held
  }
  calm_ = stall < thresholds_.calm_stall ? calm_ + 1 : 0;
  if (bounds_.tune_workers && w.workers > 1 && calm_ >= calm_needed_) {
    auto const busy_after = ratio(w.read_s, static_cast<double>(w.workers - 1) * w.wall_s);
    if (busy_after < thresholds_.spare_busy) {
      d.workers = w.workers - 1;
      d.action = autotune_action::remove_worker;
      d.reason = "no stall for " + std::to_string(calm_) +
                 " windows and the workers were mostly idle (" + numbers() + "); " +
                 std::to_string(d.workers) + " would be " + percent(busy_after) + " busy";
      calm_ = 0;
      since_removal_ = 1;
    }
  }
  return d;
}

std::size_t default_memory_budget() noexcept {
  auto const physical = physical_memory_bytes();
  return physical > 0 ? std::min(physical / 8, 4 * gib) : std::size_t{256} << 20;
}

unsigned auto_worker_threads(autotune_options const& autotune) noexcept {
  return autotune.max_workers > 0 ? autotune.max_workers
                                  : std::min(usable_cpus(), max_default_workers);
}

autotune_plan plan_autotune(loader_options const& o, std::size_t slot_bytes) {
  autotune_plan plan;
  if (o.workers == auto_workers) {
    auto const cores = usable_cpus();
    plan.threads = auto_worker_threads(o.autotune);
    plan.start_workers = std::min(plan.threads, std::max(2U, cores / 2));
  } else {
    plan.threads = o.workers;
    plan.start_workers = o.workers;
  }
  if (o.prefetch_depth == auto_depth) {
    auto budget = o.autotune.memory_budget.value_or(default_memory_budget());
    if (auto const pinned = pinned_budget(o)) {
      budget = std::min(budget, *pinned);
    }
    plan.budget_bytes = budget;
    auto const fit = slot_bytes > 0 ? budget / slot_bytes : o.autotune.max_depth;
    plan.slots = std::max<std::size_t>(1, std::min(o.autotune.max_depth, fit));
    plan.start_depth = std::min<std::size_t>(plan.slots, 2);
  } else {
    plan.slots = o.prefetch_depth;
    plan.start_depth = o.prefetch_depth;
  }
  return plan;
}

}  // namespace gpufeed::detail
