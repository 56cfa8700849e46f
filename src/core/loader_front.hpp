#pragma once
// What a `loader` holds: its core, or, for a dataset whose layout comes from its first sample,
// the layout probe until the consumer first asks for a batch, and then the core built from
// what the probe learned (layout_probe.hpp). Only the consumer thread builds the core; the
// queries any thread may make (snapshot) see the probe or the core, never a core half built.

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>

#include "core/loader_core.hpp"
#include "core/workers/layout_probe.hpp"
#include "gpufeed/dataset.hpp"
#include "gpufeed/options.hpp"
#include "gpufeed/stats.hpp"

namespace gpufeed::detail {

class loader_front {
 public:
  using clock = loader_core::clock;

  /// `options` resolved and validated. Builds and starts the core at once, or starts the probe.
  loader_front(std::shared_ptr<dataset const> data, loader_options options);
  /// Stops the core's workers (live batches keep the core itself) or the probe.
  ~loader_front();
  loader_front(loader_front const&) = delete;
  loader_front& operator=(loader_front const&) = delete;

  /// The core, or null while the layout is being learned.
  [[nodiscard]] loader_core* ready() const noexcept {
    return ready_.load(std::memory_order_acquire);
  }
  /// `on_core(core)` once the core exists, else `on_probe(probe)`; the probe is not replaced
  /// by a core meanwhile. Any thread.
  template <class OnCore, class OnProbe>
  decltype(auto) either(OnCore&& on_core, OnProbe&& on_probe) {
    if (auto* c = ready()) {
      return on_core(*c);
    }
    std::unique_lock lock{mutex_};
    if (auto* c = ready()) {
      lock.unlock();
      return on_core(*c);
    }
    return on_probe(*probe_);
  }
  /// The core, built once the probe has learned the layout: waits for it until `give_up_at`
  /// (then null) or the loader's timeout (then timeout_error). Consumer thread only. With
  /// `epoch_over` (next()), also null with *epoch_over set when the epoch ended before the
  /// layout was learned (every batch failed, under raise).
  /// @throws the probe's failure, or what building the core threw, on this and every later
  /// call; for next(), under raise, the failure of a first batch whose every sample failed.
  [[nodiscard]] loader_core* core(clock::time_point give_up_at, bool* epoch_over = nullptr);
  /// The core, waiting as long as it takes (a query that needs the layout).
  [[nodiscard]] loader_core& core() { return *core(clock::time_point::max()); }

  [[nodiscard]] loader_options const& options() const noexcept { return options_; }
  /// The core's snapshot, or the workers and reads of the probe before there is a core.
  [[nodiscard]] stats snapshot() const;

 private:
  std::shared_ptr<dataset const> data_;
  loader_options options_;
  mutable std::mutex mutex_;  // guards core_ and probe_ while the core is being built
  std::shared_ptr<loader_core> core_;
  std::atomic<loader_core*> ready_{nullptr};
  std::unique_ptr<layout_probe> probe_;
  std::exception_ptr failed_;                       // building the core failed
  std::optional<clock::time_point> waiting_since_;  // the consumer's first wait for this batch
};

}  // namespace gpufeed::detail
