#pragma once
// The loader's core: it owns the parts a batch passes through and wires them together, in the
// order of a batch's path:
//
//   epoch_source   which samples, in which batches (builtin order or given ones)   epoch_source.hpp
//   ring           slots, cursors, every change of a slot's state (no threads)             ring.hpp
//   worker_pool    threads, their loop, the idle policy                             worker_pool.hpp
//   batch_filler   reading samples into a slot, failures, completion                 batch_fill.hpp
//   device_path    the CUDA stage: copy, hand-off, release (nothing on the host)    device_path.hpp
//   consumer_side  next()'s wait, timeout and stall warnings                      consumer_side.hpp
//   lease          what a batch sees of its slot, and how it gives it back                lease.hpp
//   loader_metrics histograms, counters, ring history, trace, snapshot          loader_metrics.hpp
//   autotune_driver the autotuner's window and changes                          autotune_driver.hpp
//   held_batches   growing the ring for batches kept alive                         held_batches.hpp
//   ring_memory    what the ring may take, checked before allocation                ring_memory.hpp
//   plan_log       what the loader says at construction                                plan_log.hpp
//   staged_reads   samples read before the layout was known                        staged_reads.hpp
//   layout_probe   learning the layout from the first sample (before the core)     layout_probe.hpp
//
// `loader` owns one core through a shared_ptr, and so does every live `batch` (as its
// lease_owner), so that a batch may outlive its loader: the loader's destructor stops and joins
// the workers, and the memory goes when the last batch does.
//
// The loader's mutex guards the ring, the pool's idle state and the consumer's wait; no log call
// and no metrics lock runs under it.

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>

#include "core/consumer_side.hpp"
#include "core/device/device_path.hpp"
#include "core/device/device_stage.hpp"
#include "core/epochs/epoch_source.hpp"
#include "core/metrics/loader_metrics.hpp"
#include "core/ring/held_batches.hpp"
#include "core/ring/lease.hpp"
#include "core/ring/ring.hpp"
#include "core/ring/ring_memory.hpp"
#include "core/tuning/autotune_driver.hpp"
#include "core/workers/batch_fill.hpp"
#include "core/workers/staged_reads.hpp"
#include "core/workers/worker_pool.hpp"
#include "gpufeed/dataset.hpp"
#include "gpufeed/detail/adapted_dataset.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/options.hpp"
#include "gpufeed/stats.hpp"

namespace gpufeed::detail {

/// Makes the CUDA stage of a ring of `slots` slots of `host` (that may grow to `max_slots`).
using stage_factory = std::function<std::unique_ptr<device_stage>(
    slot_layout const& host, std::size_t slots, std::size_t max_slots,
    loader_options const& options)>;

class loader_core final : public lease_owner,
                          private worker_jobs,
                          private ring_room,
                          public std::enable_shared_from_this<loader_core> {
 public:
  using clock = consumer_side::clock;

  /// `options` must be resolved and validated. Checks the ring's memory, then allocates it;
  /// starts nothing. On the CUDA path (loader_options::target) the stage comes from
  /// `make_stage` (default: make_cuda_stage; tests give a stand-in).
  /// @throws out_of_memory naming batch_size or prefetch_depth when the ring cannot fit,
  /// logic_error when a size does not fit in std::size_t.
  loader_core(std::shared_ptr<dataset const> data, loader_options options,
              stage_factory const& make_stage = {});
  /// As above, with the layout `spec` given (learned from a staged sample, for datasets whose
  /// layout comes from their first sample) and the reads staged meanwhile, written into their
  /// batches instead of being read again.
  loader_core(std::shared_ptr<dataset const> data, loader_options options, sample_spec spec,
              std::vector<staged_read> staged, stage_factory const& make_stage = {});
  ~loader_core() override;
  loader_core(loader_core const&) = delete;
  loader_core& operator=(loader_core const&) = delete;

  /// Starts the workers. Called once, by the loader, after construction.
  void start();
  /// Stops and joins the workers; idempotent; never throws.
  void stop() noexcept;

  /// `consumer` overrides loader_options::consumer_stream (CUDA path only). Waits until the
  /// batch is ready, the timeout, or `give_up_at`, whichever comes first; at `give_up_at` it
  /// returns status::pending and consumes nothing.
  next_result next(std::optional<stream_view> consumer = std::nullopt,
                   clock::time_point give_up_at = clock::time_point::max());
  void set_epoch(std::uint64_t epoch);
  void set_epoch(std::uint64_t epoch, epoch_order order);
  [[nodiscard]] std::uint64_t epoch() const;
  /// @throws logic_error for an open-ended dataset (no state says where its sources stand).
  [[nodiscard]] loader_state state() const;
  /// @throws logic_error for an open-ended dataset, or a state of other settings.
  void restore(loader_state const& state);
  [[nodiscard]] stats snapshot() const;
  /// Writes the recorded stage spans as Trace Event Format JSON.
  /// @throws logic_error when loader_options::trace_events is 0.
  void write_trace(std::ostream& out) const { metrics_.write_trace(out); }
  /// What the loader logs at info when made (its epoch's plan, workers, ring), one line each.
  [[nodiscard]] std::string const& plan() const noexcept { return plan_; }

  [[nodiscard]] slot_layout const& layout() const noexcept { return layout_; }
  /// The sizes of the consumer's epoch's plan; zeros while not known (a given order not given
  /// yet, or an open-ended epoch, whose length is known only when it ends).
  struct plan_sizes {
    std::size_t batches = 0;
    std::size_t steps = 0;
    std::size_t samples = 0;
  };
  [[nodiscard]] plan_sizes current_plan_sizes() const;
  [[nodiscard]] epoch_order builtin_order(std::uint64_t epoch) const {
    return epochs_.builtin_order(epoch);
  }
  [[nodiscard]] loader_options const& options() const noexcept { return options_; }

  // lease_owner: what a batch calls.
  void release(lease const& held) noexcept override;
  void use_on(lease const& held, stream_view stream) override;
  [[nodiscard]] slot_layout const& host_layout() const noexcept override { return layout_; }
  [[nodiscard]] device_layout const* output_layout() const noexcept override {
    return device_.output_layout();
  }
  [[nodiscard]] int device() const noexcept override { return device_.device(); }

 private:
  // worker_jobs: what the pool's threads do.
  bool prepare_thread(unsigned worker) noexcept override;
  bool failed_locked() const noexcept override { return consumer_.failed_locked(); }
  slot* take_work_locked() override;
  bool ring_full_locked() const noexcept override { return ring_.depth_full(); }
  void work_on(slot& s, unsigned worker) noexcept override;
  bool leave_locked(slot& s) noexcept override { return ring_.detach(s); }
  void waited_for_slot(unsigned worker, std::int64_t from, std::int64_t to) noexcept override {
    metrics_.slot_waited(worker, from, to);
  }
  // ring_room: next() found every slot leased.
  void make_room(std::unique_lock<std::mutex>& lock) override;

  /// Makes `to` the active workers and depth (an autotune change) under the mutex; logs the
  /// change once the mutex is released.
  void apply(tuned_settings to, std::string const& reason);
  /// apply()'s change with the mutex held; returns the line to log once it is released.
  [[nodiscard]] std::string apply_locked(tuned_settings to, std::string const& reason);
  /// The stream next() hands the batch to (CUDA path), or nullopt on the host path.
  [[nodiscard]] std::optional<stream_view> consumer_stream(std::optional<stream_view> given) const;

  // Member order is construction order: the memory is checked (ring_) before the stage and the
  // slots are allocated, and the workers (pool_) stop before anything they use goes.
  std::shared_ptr<dataset const> data_;
  std::shared_ptr<host_memory_source> host_memory_;  // the dataset's, or null: the loader's own
  loader_options options_;
  slot_layout layout_;
  ring_plan sizes_;      // checked against the machine's memory: throws before any allocation
  std::size_t sources_;  // an open-ended dataset's sources (adapted_dataset), or 0
  epoch_source epochs_;
  loader_metrics metrics_;
  device_path device_;  // the CUDA stage, or nothing; owns the slots' host memory then
  mutable std::mutex mutex_;
  ring ring_;
  held_batches held_;
  staged_reads staged_;
  worker_pool pool_;
  consumer_side consumer_;
  autotune_driver tuner_;
  batch_filler filler_;
  std::string plan_;
};

}  // namespace gpufeed::detail
