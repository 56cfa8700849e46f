// The worker pool's idle policy: a worker finding nothing to do polls briefly, then parks; a
// freed slot wakes a parked worker only when none is polling (the poller takes the event). The
// autotuner may take a polling worker off duty (set_active_locked) just as a slot frees up: the
// event it took must still reach a worker that is on duty. Found as a hang of
// autotune_test.FastReaderAndSlowConsumerDoNotGrowWorkers under ThreadSanitizer (workers 2 -> 1,
// then 16 free slots and no worker taking one).

#include "core/workers/worker_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>

#include "core/ring/slot.hpp"

namespace {

using namespace std::chrono_literals;
using gpufeed::detail::slot;
using gpufeed::detail::worker_pool;

// Work items counted under the pool's mutex; each taken item is "filled" at once.
class counted_jobs final : public gpufeed::detail::worker_jobs {
 public:
  bool prepare_thread(unsigned /*worker*/) noexcept override { return true; }
  bool failed_locked() const noexcept override { return false; }
  slot* take_work_locked() override {
    if (available == 0) return nullptr;
    --available;
    return &item_;
  }
  bool ring_full_locked() const noexcept override { return false; }
  void work_on(slot& /*s*/, unsigned worker) noexcept override {
    last_worker_.store(worker, std::memory_order_relaxed);
    done_.fetch_add(1, std::memory_order_release);
  }
  bool leave_locked(slot& /*s*/) noexcept override { return false; }
  void waited_for_slot(unsigned /*worker*/, std::int64_t /*from*/,
                       std::int64_t /*to*/) noexcept override {}

  // Whether `count` items have been filled within `limit`; the worker that filled the last.
  // Polled, not waited for: the caller sees a fill within a microsecond, which times what it
  // does next against the filling worker's own steps.
  bool wait_done(std::uint64_t count, std::chrono::milliseconds limit, unsigned& worker) {
    auto const give_up = std::chrono::steady_clock::now() + limit;
    while (done_.load(std::memory_order_acquire) < count) {
      if (std::chrono::steady_clock::now() > give_up) return false;
    }
    worker = last_worker_.load(std::memory_order_relaxed);
    return true;
  }

  std::uint64_t available = 0;  // under the pool's mutex

 private:
  slot item_{0, nullptr, 64, 64, 1};
  std::atomic<std::uint64_t> done_{0};
  std::atomic<unsigned> last_worker_{0};
};

// One item of work, as the loader frees a slot: the event, and a wake-up when no one polls.
void free_one(std::mutex& mutex, worker_pool& pool, counted_jobs& jobs) {
  bool wake = false;
  {
    std::lock_guard const lock{mutex};
    ++jobs.available;
    wake = pool.slot_freed_locked();
  }
  if (wake) pool.wake_one();
}

// Both workers parked; a freed slot wakes one. When that was worker 1, it polls once it has
// filled the slot: taken off duty then, with a slot freed while it still polls, it must pass the
// wake-up on to worker 0, which fills that slot. Repeated with delays of 0 to 60 us before
// taking it off duty, since the poll lasts 50 us and the timing is the scheduler's.
TEST(worker_pool_test, AWakeUpTakenByAWorkerGoingOffDutyIsPassedOn) {
  std::mutex mutex;
  counted_jobs jobs;
  worker_pool pool{mutex, 2, 2};
  pool.start(jobs);
  std::uint64_t filled = 0;
  int exercised = 0;
  for (int round = 0; round < 1500; ++round) {
    std::this_thread::sleep_for(300us);  // both parked, after one polled
    free_one(mutex, pool, jobs);
    unsigned worker = 0;
    ASSERT_TRUE(jobs.wait_done(++filled, 10s, worker)) << "round " << round;
    if (worker != 1) continue;
    ++exercised;
    // Busy (a sleep this short lasts far longer): worker 1 leaves the slot and starts polling.
    auto const until =
        std::chrono::steady_clock::now() + std::chrono::microseconds{exercised % 31 * 2};
    while (std::chrono::steady_clock::now() < until) {
    }
    {
      std::lock_guard const lock{mutex};
      pool.set_active_locked(1);
    }
    free_one(mutex, pool, jobs);
    ASSERT_TRUE(jobs.wait_done(++filled, 10s, worker))
        << "round " << round << ": a slot freed just after worker 1 went off duty was not filled "
        << "within 10 s (a lost wake-up)";
    EXPECT_EQ(worker, 0U) << "round " << round << ": filled by a worker off duty";
    std::lock_guard const lock{mutex};
    pool.set_active_locked(2);
  }
  EXPECT_GT(exercised, 0) << "no round woke worker 1 first";
  pool.stop();
}

// The plain case around it: a slot freed while every worker on duty is parked wakes one.
TEST(worker_pool_test, AFreedSlotWakesAParkedWorker) {
  std::mutex mutex;
  counted_jobs jobs;
  worker_pool pool{mutex, 2, 2};
  pool.start(jobs);
  for (std::uint64_t round = 1; round <= 50; ++round) {
    std::this_thread::sleep_for(300us);  // both parked (one after polling)
    free_one(mutex, pool, jobs);
    unsigned worker = 0;
    ASSERT_TRUE(jobs.wait_done(round, 10s, worker)) << "round " << round;
  }
  pool.stop();
}

}  // namespace
