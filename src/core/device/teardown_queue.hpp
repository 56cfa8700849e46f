#pragma once
// Blocking teardown moved off the thread that happens to drop the last reference.
//
// A loader's CUDA stage is destroyed by whichever thread drops the last reference to the loader's
// core: with batches that outlive their loader, the thread that destroys the last batch, which
// for gpufeed::torch is whichever thread frees the last tensor (torch's autograd thread in the
// middle of a backward pass, say). Its teardown synchronizes with the GPU (the copy stream, each
// slot's release, and cudaFreeHost / cudaFree, which synchronize the device); run here, on one
// background thread, it blocks nobody.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace gpufeed::detail {

/// Runs jobs in order on one background thread, started on the first post.
class teardown_queue {
 public:
  teardown_queue() = default;
  /// Runs what is still queued, then joins the thread.
  ~teardown_queue();
  teardown_queue(teardown_queue const&) = delete;
  teardown_queue& operator=(teardown_queue const&) = delete;

  /// Queues `job` and returns without waiting for it. Never throws: when the job cannot be
  /// queued (no memory, no thread) it runs here, now. A job must not throw (what it throws is
  /// dropped); it may post further jobs, but must not drain.
  void post(std::function<void()> job) noexcept;
  /// Blocks until every job posted before the call has run. Not from a job.
  void drain();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> jobs_;
  std::uint64_t posted_ = 0;
  std::uint64_t done_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

/// Queues `job` on the process's teardown thread (during static destruction, after that thread
/// is gone, runs it here, now). Never throws.
void teardown_async(std::function<void()> job) noexcept;
/// Blocks until every teardown queued so far has run (e.g. before allocating what those free).
void wait_for_teardowns();

}  // namespace gpufeed::detail
