#include "core/device/teardown_queue.hpp"

#include <atomic>
#include <exception>
#include <utility>

namespace gpufeed::detail {

namespace {
void run_now(std::function<void()>& job) noexcept {
  try {
    job();
  } catch (...) {  // a teardown job logs its own failures; nothing may escape a destructor
  }
}
}  // namespace

teardown_queue::~teardown_queue() {
  {
    std::lock_guard const lock{mutex_};
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void teardown_queue::post(std::function<void()> job) noexcept {
  try {
    std::unique_lock lock{mutex_};
    if (!stopping_) {
      if (!thread_.joinable()) thread_ = std::thread{[this] { run(); }};
      jobs_.push_back(std::move(job));
      ++posted_;
      lock.unlock();
      changed_.notify_all();
      return;
    }
  } catch (...) {  // no memory for the queue, or no thread: fall through and run it here
  }
  run_now(job);
}

void teardown_queue::drain() {
  std::unique_lock lock{mutex_};
  auto const target = posted_;
  changed_.wait(lock, [&] { return done_ >= target; });
}

void teardown_queue::run() {
  std::unique_lock lock{mutex_};
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and everything queued has run
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    run_now(job);
    job = nullptr;  // what the job owns goes here too, off the lock
    lock.lock();
    ++done_;
    changed_.notify_all();
  }
}

namespace {
// Set when the process's queue has been destroyed (static destruction): later teardowns, from
// objects destroyed after it, run where they are. Constant-initialized, so it outlives the queue.
std::atomic<bool> shared_queue_gone{false};

struct shared_queue {
  teardown_queue queue;
  ~shared_queue() { shared_queue_gone.store(true); }
};

teardown_queue& process_queue() {
  static shared_queue shared;
  return shared.queue;
}
}  // namespace

void teardown_async(std::function<void()> job) noexcept {
  if (shared_queue_gone.load()) {
    run_now(job);
    return;
  }
  process_queue().post(std::move(job));
}

void wait_for_teardowns() {
  if (!shared_queue_gone.load()) process_queue().drain();
}

}  // namespace gpufeed::detail
