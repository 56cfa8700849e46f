#pragma once
// The loader's shared state: the ring, the worker pool and the consumer's hand-off.
//
// `loader` owns one of these through a shared_ptr, and so does every live `batch`, so that a
// batch may outlive its loader: the loader's destructor stops and joins the workers, and the
// memory goes when the last batch does.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <thread>
#include <vector>

#include "gpufeed/batch.hpp"
#include "gpufeed/batch_plan.hpp"
#include "gpufeed/dataset.hpp"
#include "gpufeed/detail/autotuner.hpp"
#include "gpufeed/detail/device_stage.hpp"
#include "gpufeed/detail/given_order.hpp"
#include "gpufeed/detail/latency_histogram.hpp"
#include "gpufeed/detail/slot.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/detail/trace_recorder.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/options.hpp"
#include "gpufeed/sampler.hpp"
#include "gpufeed/stats.hpp"

namespace gpufeed::detail {

/// What one worker is doing and what it has measured; written by that worker only.
struct alignas(64) worker_activity {
  std::atomic<slot const*> on{nullptr};  // the slot of the read in progress, or null
  std::atomic<std::size_t> index{0};     // the sample being read
  std::atomic<std::int64_t> since_ns{0};
  latency_histogram read_time;       // per dataset::read
  latency_histogram slot_wait_time;  // per idle spell with no free slot
};

class loader_core : public std::enable_shared_from_this<loader_core> {
 public:
  using clock = std::chrono::steady_clock;

  /// `options` must be resolved and validated. Allocates the ring; does not start the workers.
  loader_core(std::shared_ptr<dataset const> data, loader_options options);
  ~loader_core();
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
  [[nodiscard]] loader_state state() const;
  void restore(loader_state const& state);
  [[nodiscard]] stats snapshot() const;
  /// Writes the recorded stage spans as Trace Event Format JSON.
  /// @throws logic_error when loader_options::trace_events is 0.
  void write_trace(std::ostream& out) const;
  /// @throws logic_error (as write_trace) when loader_options::trace_events is 0.
  void expect_tracing() const;
  /// Gives a leased slot back. Called by `batch`.
  void release(slot* s) noexcept;
  /// Orders slot `s`'s release after `stream` too (batch::use_on). CUDA path only.
  void use_on(slot const& s, stream_view stream);

  [[nodiscard]] slot_layout const& layout() const noexcept { return layout_; }
  /// The sizes of the consumer's epoch's plan (for a given order: zeros until one is given).
  struct plan_sizes {
    std::size_t batches = 0;
    std::size_t steps = 0;
    std::size_t samples = 0;
  };
  [[nodiscard]] plan_sizes current_plan_sizes() const;
  [[nodiscard]] loader_options const& options() const noexcept { return options_; }
  /// The CUDA stage, or null on the host path.
  [[nodiscard]] device_stage const* stage() const noexcept { return stage_.get(); }

 private:
  // All *_locked functions expect mutex_ held.
  /// The plan of `epoch`: the builtin one, or the order given for it (null when none is).
  [[nodiscard]] batch_plan const* plan_locked(std::uint64_t epoch) const noexcept;
  /// The dataset index at `position` of `epoch`'s shard (its plan must be known).
  [[nodiscard]] std::size_t index_locked(std::uint64_t epoch, std::size_t position) const;
  /// The dataset index of a slot's sample at `position` in the batch.
  [[nodiscard]] std::size_t slot_index(slot const& s, std::size_t position) const noexcept;
  slot* find_work_locked();
  void assign_locked(slot& s);
  void flush_locked(cursor to);
  [[nodiscard]] cursor normalized(cursor c) const noexcept;
  [[nodiscard]] slot* consumer_slot_locked() const noexcept;
  [[nodiscard]] bool all_leased_locked() const noexcept;
  [[nodiscard]] std::size_t count_locked(slot::state status) const noexcept;
  /// The sample the consumer's batch is waiting for, and a sentence about it.
  [[nodiscard]] std::pair<std::size_t, std::string> describe_wait_locked(slot const* s) const;
  void record_delivery_locked(slot const& s);
  /// Held batches: adds one slot to a ring whose every slot is leased, with the lock released
  /// during the allocation (`lock` is held again on return). Returns false when the ring is at
  /// its limit (loader_options::held_batches_budget).
  bool grow_locked(std::unique_lock<std::mutex>& lock);
  /// The error next() raises when every slot is leased and the ring may not grow.
  [[nodiscard]] logic_error all_leased_error_locked() const;
  /// Records next()'s wait (steady_ns() from `from` to `to`) for the batch at `consumer_`
  /// (`ready` slots seen) and, at most every ring_interval_ns_, the ring's occupancy.
  /// `ready` is nullopt for a wait that timed out.
  void record_wait_locked(std::int64_t from, std::int64_t to, std::optional<std::size_t> ready);

  /// Slots of the active depth that are not free (assigned, ready or leased).
  [[nodiscard]] bool depth_full_locked() const noexcept;
  /// The autotuner's step, at the end of next(), `now` (steady_ns()) being the delivery's time:
  /// every autotune.window_batches deliveries it decides from the window's measurements and
  /// applies the change. Returns the log line of a change, or an empty string.
  [[nodiscard]] std::string tune_locked(std::int64_t now);
  /// Makes `workers` and `depth` the active settings (an autotune change) and returns the line
  /// to log; the caller logs it once the lock is released.
  [[nodiscard]] std::string apply_locked(unsigned workers, std::size_t depth,
                                         std::string const& reason);
  /// The workers' read and slot-wait times so far, each summed over all threads.
  struct worker_totals {
    std::int64_t read_ns = 0;
    std::int64_t slot_wait_ns = 0;
  };
  [[nodiscard]] worker_totals worker_totals_now() const noexcept;
  /// The sum of next()'s waits so far.
  [[nodiscard]] std::int64_t consumer_wait_ns_locked() const noexcept {
    return static_cast<std::int64_t>(consumer_wait_time_.total_ns());
  }

  void worker_main(unsigned worker);
  void spin_for_work(std::unique_lock<std::mutex>& lock);
  /// Records that a slot became free. Returns whether a parked worker must be woken (with
  /// notify_one, once the lock is released): true only when no worker is polling.
  [[nodiscard]] bool slot_freed_locked();
  void fill(slot& s, unsigned worker);
  void read_one(slot& s, std::size_t position, unsigned worker);
  void finish_contents(slot& s);
  void complete(slot& s, unsigned worker);
  /// Records an error that stops the loader (a CUDA failure on a worker): next() throws it.
  void fail(std::exception_ptr error) noexcept;

  std::shared_ptr<dataset const> data_;
  loader_options options_;
  slot_layout layout_;
  autotune_plan tuning_;  // threads and slots to allocate; the manual settings when not auto
  sampler sampler_;
  batch_plan plan_;
  clock::time_point started_;
  std::int64_t started_ns_;                // started_ in steady_ns() terms
  std::unique_ptr<trace_recorder> trace_;  // null unless loader_options::trace_events > 0

  std::unique_ptr<device_stage> stage_;  // CUDA path only; owns the slots' host memory

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;     // workers: a slot is free or a batch needs hands
  std::condition_variable ready_cv_;    // consumer: a batch is ready
  std::condition_variable standby_cv_;  // workers beyond active_workers_ (autotuning)
  unsigned active_workers_;             // workers taking work; the others wait on standby_cv_
  std::size_t active_depth_;            // slots in use: slots_[active_depth_..] are never assigned
  std::unique_ptr<autotuner> tuner_;    // null unless workers or prefetch_depth is automatic
  // The autotuner's window (consumer side, under mutex_): where it began, and the totals then.
  std::int64_t window_from_ns_ = 0;  // steady_ns(); 0 until the first delivery
  std::int64_t window_wait_ns_ = 0;
  std::int64_t window_read_ns_ = 0;
  std::int64_t window_slot_wait_ns_ = 0;
  std::uint64_t window_batches_ = 0;
  std::uint64_t tune_changes_ = 0;
  std::uint64_t last_change_batch_ = 0;
  // The ring: reserved for max_slots_ at construction, so that growing it never moves the
  // vector (workers hold slot pointers; every access is under mutex_).
  std::vector<std::unique_ptr<slot>> slots_;
  std::size_t max_slots_;                     // the held-batches limit, in slots
  std::size_t grown_ = 0;                     // slots added because batches were held
  std::shared_ptr<given_order const> given_;  // sample_order::given: the latest epoch's order
  std::uint64_t generation_ = 0;
  cursor producer_;  // the next batch to assign to a slot
  cursor consumer_;  // the next batch next() returns
  bool stopping_ = false;
  std::exception_ptr fatal_;                   // a failure no batch can carry; next() throws it
  unsigned parked_workers_ = 0;                // workers blocked on work_cv_
  unsigned spinning_workers_ = 0;              // workers polling ring_events_ before they park
  std::atomic<std::uint64_t> ring_events_{0};  // bumped when work appears or a slot frees up
  bool consumer_waiting_ = false;              // next() blocked on ready_cv_
  // A wait for the batch at consumer_ that try_next_for left pending: the timeout and the stall
  // warnings count from its start. Cleared when a batch is delivered or the position changes.
  std::optional<clock::time_point> pending_since_;
  clock::time_point pending_warn_at_{};
  std::atomic<bool> stop_flag_{false};  // mirrors stopping_ for reads polling it
  std::unique_ptr<worker_activity[]> activity_;
  std::vector<std::thread> threads_;

  // Consumer-side counters, guarded by mutex_.
  std::uint64_t batches_ = 0;
  std::uint64_t samples_ = 0;
  std::uint64_t skipped_ = 0;
  std::uint64_t failed_batches_ = 0;
  std::vector<std::size_t> skipped_list_;
  // next()'s waits (record_exclusive: written only under mutex_); total_ns() is their sum.
  latency_histogram consumer_wait_time_;
  double ready_sum_ = 0;
  std::int64_t first_batch_ns_ = 0;  // since started_; 0 until the first batch
  std::int64_t first_wait_ns_ = 0;
  std::vector<ring_sample> ring_history_;  // capacity reserved at construction
  std::int64_t ring_interval_ns_;
  std::int64_t ring_next_ns_ = 0;  // since started_
};

}  // namespace gpufeed::detail
