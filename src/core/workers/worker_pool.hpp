#pragma once
// The worker pool: the threads, the loop each of them runs, and the idle policy (poll briefly,
// then park). What a worker does with a slot is the loader's (worker_jobs); the pool decides
// only when a worker looks for work, when it sleeps and who wakes it.
//
// Everything named *_locked expects the loader's mutex (the one given to the constructor) held.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "core/ring/slot.hpp"

namespace gpufeed::detail {

/// What the pool's threads do; the loader implements it (the ring, filling a batch, metrics).
class worker_jobs {
 public:
  virtual ~worker_jobs() = default;
  /// Once per thread, before its first job (the CUDA path binds the device). False: the thread
  /// ends (the loader failed). No lock held.
  [[nodiscard]] virtual bool prepare_thread(unsigned worker) noexcept = 0;
  /// Whether the loader failed, so that no batch can be completed any more. Under the mutex.
  [[nodiscard]] virtual bool failed_locked() const noexcept = 0;
  /// A slot with work for one more worker, attached to it; null when there is none. Under the
  /// mutex.
  [[nodiscard]] virtual slot* take_work_locked() = 0;
  /// Whether every slot in use is taken (a worker idle then waits for a free slot). Under the
  /// mutex.
  [[nodiscard]] virtual bool ring_full_locked() const noexcept = 0;
  /// Works on `s` until it has nothing left for this worker. No lock held.
  virtual void work_on(slot& s, unsigned worker) noexcept = 0;
  /// The worker leaves `s`; true when that made a slot usable again. Under the mutex.
  [[nodiscard]] virtual bool leave_locked(slot& s) noexcept = 0;
  /// `worker` was idle because no slot was free, [from, to) in steady_ns(). No lock held.
  virtual void waited_for_slot(unsigned worker, std::int64_t from, std::int64_t to) noexcept = 0;

 protected:
  worker_jobs() = default;
  worker_jobs(worker_jobs const&) = default;
  worker_jobs& operator=(worker_jobs const&) = default;
};

class worker_pool {
 public:
  /// `threads` threads, `active` of them taking work at first (the others on standby, for the
  /// autotuner to add). Starts nothing.
  worker_pool(std::mutex& mutex, unsigned threads, unsigned active);
  /// Stops and joins the threads.
  ~worker_pool();
  worker_pool(worker_pool const&) = delete;
  worker_pool& operator=(worker_pool const&) = delete;

  /// Starts the threads, each running the loop over `jobs`. Called once.
  void start(worker_jobs& jobs);
  /// Tells every thread to stop, and joins them: returns once reads in progress return (they see
  /// stop_flag()). Idempotent; never throws.
  void stop() noexcept;
  /// Set once the pool stops; a read may poll it (read_context::stop_requested).
  [[nodiscard]] std::atomic<bool> const& stop_flag() const noexcept { return stop_flag_; }

  [[nodiscard]] unsigned threads() const noexcept { return threads_; }
  [[nodiscard]] unsigned active_locked() const noexcept { return active_; }
  /// Lets `active` threads take work (autotuning): added ones start, removed ones finish their
  /// read and go on standby.
  void set_active_locked(unsigned active);

  /// New work appeared (a batch started, a slot added, the depth raised, an epoch's order
  /// given): a polling worker sees it, and parked ones are woken, for many hands on a new batch.
  void work_appeared_locked();
  /// A slot became free. Returns whether a parked worker must be woken (wake_one(), after the
  /// mutex is released): only when no worker is polling, which sees it without a system call.
  [[nodiscard]] bool slot_freed_locked() noexcept;
  /// Wakes one parked worker (it takes the slot and wakes others to help fill it).
  void wake_one() noexcept;

 private:
  void run(unsigned worker, worker_jobs& jobs);
  /// A worker found nothing to do: it polls the event counter for a short while (when no other
  /// worker does), then parks on the condition variable. Returns with `lock` held.
  void idle(std::unique_lock<std::mutex>& lock);

  std::mutex& mutex_;
  unsigned const threads_;
  // Under mutex_:
  unsigned active_;  // workers taking work; the others wait on standby_cv_
  bool stopping_ = false;
  unsigned parked_ = 0;                   // workers blocked on work_cv_
  unsigned spinning_ = 0;                 // workers polling events_ before they park
  std::condition_variable work_cv_;       // a slot is free or a batch needs hands
  std::condition_variable standby_cv_;    // workers beyond active_
  std::atomic<std::uint64_t> events_{0};  // bumped when work appears or a slot frees up
  std::atomic<bool> stop_flag_{false};    // mirrors stopping_ for reads polling it
  std::vector<std::thread> threads_running_;
};

}  // namespace gpufeed::detail
