// The teardown queue: blocking teardown (a CUDA stage's synchronization and frees) runs on its
// own thread, in order, never on the thread that posts it; drain() waits for what was posted;
// the queue's destruction runs what is left.

#include "core/device/teardown_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

using gpufeed::detail::teardown_queue;

// A job that blocks until opened, standing in for a teardown that waits for the GPU. The wait
// has a way out (far beyond any scheduling delay), so that a queue that ran jobs on the posting
// thread fails the tests instead of hanging them.
struct gate {
  std::mutex mutex;
  std::condition_variable opened_cv;
  bool opened = false;
  void open() {
    {
      std::lock_guard const lock{mutex};
      opened = true;
    }
    opened_cv.notify_all();
  }
  void wait() {
    std::unique_lock lock{mutex};
    opened_cv.wait_for(lock, std::chrono::seconds{30}, [&] { return opened; });
  }
};

TEST(teardown_queue_test, PostReturnsWhileTheJobStillBlocksOnAnotherThread) {
  teardown_queue queue;
  gate blocker;
  std::promise<std::thread::id> ran_on;
  auto where = ran_on.get_future();
  queue.post([&] {
    ran_on.set_value(std::this_thread::get_id());
    blocker.wait();
  });
  // post() came back although the job cannot finish until the gate opens: it does not run here.
  EXPECT_NE(where.get(), std::this_thread::get_id());
  blocker.open();
  queue.drain();
}

TEST(teardown_queue_test, DrainWaitsForEveryJobPostedBefore) {
  teardown_queue queue;
  gate blocker;
  std::atomic<int> done{0};
  queue.post([&] {
    blocker.wait();
    done.fetch_add(1);
  });
  queue.post([&] { done.fetch_add(1); });
  std::thread opener{[&] { blocker.open(); }};
  queue.drain();
  EXPECT_EQ(done.load(), 2);
  opener.join();
}

TEST(teardown_queue_test, JobsRunInTheOrderPosted) {
  teardown_queue queue;
  std::vector<int> order;  // written by the queue's one thread only
  for (int i = 0; i < 100; ++i) queue.post([&order, i] { order.push_back(i); });
  queue.drain();
  ASSERT_EQ(order.size(), 100U);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
}

TEST(teardown_queue_test, AThrowingJobDoesNotStopTheOthers) {
  teardown_queue queue;
  std::atomic<bool> after{false};
  queue.post([] { throw std::runtime_error{"teardown failed"}; });
  queue.post([&] { after.store(true); });
  queue.drain();
  EXPECT_TRUE(after.load());
}

TEST(teardown_queue_test, AJobMayPostAnother) {
  teardown_queue queue;
  std::atomic<bool> second{false};
  queue.post([&] { queue.post([&] { second.store(true); }); });
  queue.drain();  // the first job has run, so the second is posted; drain again for it
  queue.drain();
  EXPECT_TRUE(second.load());
}

TEST(teardown_queue_test, DestructionRunsWhatIsLeft) {
  std::atomic<int> done{0};
  {
    gate blocker;  // declared first: it outlives the queue, whose destructor runs the jobs
    teardown_queue queue;
    queue.post([&] { blocker.wait(); });
    for (int i = 0; i < 5; ++i) queue.post([&] { done.fetch_add(1); });
    blocker.open();
  }  // nothing drained: the destructor runs the rest before it joins
  EXPECT_EQ(done.load(), 5);
}

TEST(teardown_queue_test, TheProcessQueueRunsOffTheCallersThread) {
  std::promise<std::thread::id> ran_on;
  auto where = ran_on.get_future();
  gpufeed::detail::teardown_async([&] { ran_on.set_value(std::this_thread::get_id()); });
  gpufeed::detail::wait_for_teardowns();
  ASSERT_EQ(where.wait_for(std::chrono::seconds{0}), std::future_status::ready);
  EXPECT_NE(where.get(), std::this_thread::get_id());
}

}  // namespace
