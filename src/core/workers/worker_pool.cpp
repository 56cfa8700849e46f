#include "core/workers/worker_pool.hpp"

#include <chrono>
#include <optional>
#include <utility>

#include "core/units.hpp"

namespace gpufeed::detail {

worker_pool::worker_pool(std::mutex& mutex, unsigned threads, unsigned active)
    : mutex_{mutex}, threads_{threads}, active_{active} {}

worker_pool::~worker_pool() {
  stop();
}

void worker_pool::start(worker_jobs& jobs) {
  threads_running_.reserve(threads_);
  try {
    for (unsigned w = 0; w < threads_; ++w) {
      threads_running_.emplace_back([this, w, &jobs] { run(w, jobs); });
    }
  } catch (...) {
    stop();
    throw;
  }
}

void worker_pool::stop() noexcept {
  {
    std::lock_guard const lock{mutex_};
    stopping_ = true;
    events_.fetch_add(1, std::memory_order_release);
  }
  stop_flag_.store(true, std::memory_order_relaxed);
  work_cv_.notify_all();
  standby_cv_.notify_all();
  for (auto& t : threads_running_) {
    if (t.joinable()) {
      t.join();
    }
  }
}

void worker_pool::set_active_locked(unsigned active) {
  active_ = active;
  standby_cv_.notify_all();  // added workers start; removed ones finish their read and park
  work_cv_.notify_all();     // parked workers re-check whether they are still active
}

void worker_pool::work_appeared_locked() {
  events_.fetch_add(1, std::memory_order_release);  // a polling worker joins
  if (parked_ > 0) {
    work_cv_.notify_all();
  }
}

bool worker_pool::slot_freed_locked() noexcept {
  events_.fetch_add(1, std::memory_order_release);
  return spinning_ == 0 && parked_ > 0;
}

void worker_pool::wake_one() noexcept {
  work_cv_.notify_one();
}

void worker_pool::run(unsigned worker, worker_jobs& jobs) {
  if (!jobs.prepare_thread(worker)) {
    return;
  }
  // An idle spell while the ring was full, recorded once the mutex is released.
  std::optional<std::pair<std::int64_t, std::int64_t>> slot_wait;
  std::unique_lock lock{mutex_};
  // After a fatal error no batch can be completed: workers stop rather than retry it forever.
  while (!stopping_ && !jobs.failed_locked()) {
    if (worker >= active_) {
      // Not needed now (autotuning): sleep until the tuner adds workers or the loader stops.
      // A worker taken off duty while it polled (idle()) may hold a wake-up: whoever freed a
      // slot meanwhile saw it polling and woke no one. It takes no work now, so it passes the
      // wake-up on to a parked worker (one parked off duty after its own poll passes it on in
      // turn, here). Found as a hang: workers 2 -> 1, then free slots and none taken.
      if (parked_ > 0) {
        work_cv_.notify_one();
      }
      standby_cv_.wait(lock, [&] { return stopping_ || worker < active_; });
      continue;
    }
    slot* s = jobs.take_work_locked();
    if (s == nullptr) {
      // Idle because every slot in use is taken counts as waiting for a free slot.
      bool const ring_full = jobs.ring_full_locked();
      auto const from = steady_ns();
      idle(lock);
      if (ring_full) {
        // A second spell before any work (rare) records the first now, with the mutex released
        // as for any other.
        auto const earlier = std::exchange(slot_wait, std::pair{from, steady_ns()});
        if (earlier) {
          lock.unlock();
          jobs.waited_for_slot(worker, earlier->first, earlier->second);
          lock.lock();
        }
      }
      continue;
    }
    lock.unlock();
    if (slot_wait) {
      jobs.waited_for_slot(worker, slot_wait->first, slot_wait->second);
      slot_wait.reset();
    }
    jobs.work_on(*s, worker);
    lock.lock();
    if (jobs.leave_locked(*s) && slot_freed_locked()) {  // a discarded slot just became usable
      work_cv_.notify_one();
    }
  }
  lock.unlock();
  if (slot_wait) {
    jobs.waited_for_slot(worker, slot_wait->first, slot_wait->second);
  }
}

void worker_pool::idle(std::unique_lock<std::mutex>& lock) {
  if (spinning_ > 0) {
    ++parked_;
    work_cv_.wait(lock);
    --parked_;
    return;
  }
  // Waking a parked thread is a system call (several microseconds, more in a VM), paid by the
  // consumer in release(). One idle worker polls for a short while first, so that a consumer
  // that gives slots back at a high rate never pays it; after the window it parks as usual.
  // The poll is on an event counter, not the mutex: the consumer's path stays uncontended.
  constexpr auto window = std::chrono::microseconds{50};
  ++spinning_;
  auto const seen = events_.load(std::memory_order_acquire);
  lock.unlock();
  auto const until = std::chrono::steady_clock::now() + window;
  bool event = false;
  // Yielding between polls hands the core to a worker or consumer that has real work when the
  // machine is oversubscribed (more threads than cores); on an idle core it returns at once.
  while (!(event = events_.load(std::memory_order_acquire) != seen) &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::yield();
  }
  lock.lock();
  --spinning_;
  // Re-checked under the lock: an event between the poll and here is never lost, because
  // whoever caused it saw spinning_ > 0 and left the wake-up to this worker.
  if (!event && !stopping_ && events_.load(std::memory_order_relaxed) == seen) {
    ++parked_;
    work_cv_.wait(lock);
    --parked_;
  }
}

}  // namespace gpufeed::detail
