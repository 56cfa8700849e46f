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
#include <thread>
#include <vector>

#include "gpufeed/batch.hpp"
#include "gpufeed/batch_plan.hpp"
#include "gpufeed/dataset.hpp"
#include "gpufeed/detail/device_stage.hpp"
#include "gpufeed/detail/slot.hpp"
#include "gpufeed/detail/slot_layout.hpp"
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
  std::atomic<std::int64_t> read_ns{0};
  std::atomic<std::int64_t> slot_wait_ns{0};
  std::atomic<std::uint64_t> reads{0};
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

  /// `consumer` overrides loader_options::consumer_stream (CUDA path only).
  std::optional<batch> next(std::optional<stream_view> consumer = std::nullopt);
  void set_epoch(std::uint64_t epoch);
  [[nodiscard]] std::uint64_t epoch() const;
  [[nodiscard]] loader_state state() const;
  void restore(loader_state const& state);
  [[nodiscard]] stats snapshot() const;
  /// Gives a leased slot back. Called by `batch`.
  void release(slot* s) noexcept;

  [[nodiscard]] slot_layout const& layout() const noexcept { return layout_; }
  [[nodiscard]] batch_plan const& plan() const noexcept { return plan_; }
  [[nodiscard]] loader_options const& options() const noexcept { return options_; }
  /// The CUDA stage, or null on the host path.
  [[nodiscard]] device_stage const* stage() const noexcept { return stage_.get(); }

 private:
  // All *_locked functions expect mutex_ held.
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

  void worker_main(unsigned worker);
  void spin_for_work(std::unique_lock<std::mutex>& lock);
  /// Records that a slot became free. Returns whether a parked worker must be woken (with
  /// notify_one, once the lock is released): true only when no worker is polling.
  [[nodiscard]] bool slot_freed_locked();
  void fill(slot& s, unsigned worker);
  void read_one(slot& s, std::size_t position, unsigned worker);
  void finish_contents(slot& s);
  void complete(slot& s);
  /// Records an error that stops the loader (a CUDA failure on a worker): next() throws it.
  void fail(std::exception_ptr error) noexcept;

  std::shared_ptr<dataset const> data_;
  loader_options options_;
  slot_layout layout_;
  sampler sampler_;
  batch_plan plan_;
  clock::time_point started_;

  std::unique_ptr<device_stage> stage_;  // CUDA path only; owns the slots' host memory

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;   // workers: a slot is free or a batch needs hands
  std::condition_variable ready_cv_;  // consumer: a batch is ready
  std::vector<std::unique_ptr<slot>> slots_;
  std::uint64_t generation_ = 0;
  cursor producer_;  // the next batch to assign to a slot
  cursor consumer_;  // the next batch next() returns
  bool stopping_ = false;
  std::exception_ptr fatal_;                   // a failure no batch can carry; next() throws it
  unsigned parked_workers_ = 0;                // workers blocked on work_cv_
  unsigned spinning_workers_ = 0;              // workers polling ring_events_ before they park
  std::atomic<std::uint64_t> ring_events_{0};  // bumped when work appears or a slot frees up
  bool consumer_waiting_ = false;              // next() blocked on ready_cv_
  std::atomic<bool> stop_flag_{false};         // mirrors stopping_ for reads polling it
  std::unique_ptr<worker_activity[]> activity_;
  std::vector<std::thread> threads_;

  // Consumer-side counters, guarded by mutex_.
  std::uint64_t batches_ = 0;
  std::uint64_t samples_ = 0;
  std::uint64_t skipped_ = 0;
  std::uint64_t failed_batches_ = 0;
  std::vector<std::size_t> skipped_list_;
  std::int64_t consumer_wait_ns_ = 0;
  double ready_sum_ = 0;
};

}  // namespace gpufeed::detail
