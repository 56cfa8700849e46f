// Destroying the loader in every state (right after construction, with a full ring, during reads
// that honour or ignore stop, after errors and timeouts), and no growth over many loaders.

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::loader;
using namespace gpufeed::test;  // NOLINT(google-build-using-namespace): test doubles

// Threads of the process with no loader alive (after any sanitizer helper thread has started).
std::size_t baseline_threads() {
  std::thread{[] {}}.join();
  return threads_settled_to(thread_count());
}

// ------------------------------------------------------------------------------------------------
// Destruction in every state.

TEST(loader_lifetime_test, DestroyRightAfterConstruction) {
  auto const threads = baseline_threads();
  auto data = std::make_shared<echo_dataset>(100, 32);
  for (std::size_t i = 0; i < scaled(50, 10); ++i) {
    loader l{data, small_options(4, 4)};
  }
  EXPECT_EQ(threads_settled_to(threads), threads);
}

TEST(loader_lifetime_test, DestroyWithFullRing) {
  auto const threads = baseline_threads();
  auto data = std::make_shared<echo_dataset>(100, 32);
  {
    auto o = small_options(4, 3);
    o.prefetch_depth = 4;
    loader l{data, o};
    ASSERT_TRUE(wait_ready(l, 4)) << "the ring never filled";
    EXPECT_EQ(l.snapshot().ring_ready, 4U);
  }
  EXPECT_EQ(threads_settled_to(threads), threads);
}

TEST(loader_lifetime_test, DestroyDuringReadThatHonoursStop) {
  auto const threads = baseline_threads();
  auto g = std::make_shared<gate>();
  auto data = std::make_shared<gated_dataset>(16, g, std::set<std::size_t>{}, true);
  {
    loader l{data, small_options(4, 2)};
    ASSERT_TRUE(g->wait_entered(2)) << "the workers never started reading";
  }  // the gate is never opened: only stop_requested() lets the reads return
  EXPECT_GE(g->stopped(), 1U) << "reads in progress never saw stop_requested()";
  EXPECT_FALSE(g->is_open());
  EXPECT_EQ(threads_settled_to(threads), threads);
}

TEST(loader_lifetime_test, DestroyDuringReadThatIgnoresStop) {
  auto const threads = baseline_threads();
  auto g = std::make_shared<gate>();
  auto data = std::make_shared<gated_dataset>(16, g, std::set<std::size_t>{}, false);
  std::optional<std::thread> releaser;
  {
    loader l{data, small_options(4, 2)};
    ASSERT_TRUE(g->wait_entered(2)) << "the workers never started reading";
    releaser.emplace([g] {
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
      g->open();
    });
  }  // waits for the reads in progress, which return once the releaser opens the gate
  releaser->join();
  EXPECT_TRUE(g->is_open());
  EXPECT_EQ(threads_settled_to(threads), threads);
}

TEST(loader_lifetime_test, BatchesOutliveTheLoader) {
  auto const threads = baseline_threads();
  auto const datasets_before = lifetime_counter<echo_dataset>::alive();
  std::vector<gpufeed::batch> held;
  std::weak_ptr<echo_dataset> watch;
  {
    auto data = std::make_shared<echo_dataset>(64, 24);
    watch = data;
    auto o = small_options(4, 3);
    o.shuffle = true;
    o.seed = 9;
    loader l{data, o};
    for (int i = 0; i < 3; ++i) {
      auto b = l.next();
      ASSERT_TRUE(b.has_value());
      held.push_back(std::move(*b));
    }
  }  // loader and the test's dataset pointer are gone; the leases are not
  EXPECT_EQ(threads_settled_to(threads), threads);
  for (auto const& b : held) {
    EXPECT_TRUE(echo_content_matches(b, 24));
    EXPECT_EQ(b.field("payload").bytes(), 4U * 24U);
  }
  held[1].release();
  EXPECT_TRUE(echo_content_matches(held[0], 24));
  EXPECT_TRUE(echo_content_matches(held[2], 24));
  gpufeed::batch moved{std::move(held[2])};
  EXPECT_TRUE(echo_content_matches(moved, 24));
  held.clear();
  moved.release();
  EXPECT_TRUE(watch.expired()) << "the dataset outlived the loader and every batch";
  EXPECT_EQ(lifetime_counter<echo_dataset>::alive(), datasets_before);
}

TEST(loader_lifetime_test, DestroyAfterSampleError) {
  auto const threads = baseline_threads();
  auto data = std::make_shared<failing_dataset>(40, std::set<std::size_t>{1, 30});
  {
    loader l{data, small_options(4, 2)};
    EXPECT_THROW((void)l.next(), gpufeed::sample_error);
  }
  {
    // Destroyed with a failure still waiting in the ring, never reported.
    auto const before = data->throws();
    loader l{data, small_options(4, 2)};
    ASSERT_TRUE(eventually([&] { return data->throws() > before; }));
  }
  {
    auto o = small_options(4, 2);
    o.on_error = gpufeed::error_policy::skip;
    loader l{data, o};
    auto b = l.next();
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->skipped().size(), 1U);
  }
  EXPECT_EQ(threads_settled_to(threads), threads);
}

TEST(loader_lifetime_test, DestroyAfterTimeoutWithReadBlocked) {
  auto const threads = baseline_threads();
  auto g = std::make_shared<gate>();
  auto data = std::make_shared<gated_dataset>(16, g, std::set<std::size_t>{1}, true);
  {
    auto o = small_options(4, 2);
    o.timeout = std::chrono::milliseconds{10};
    loader l{data, o};
    EXPECT_THROW((void)l.next(), gpufeed::timeout_error);
  }
  EXPECT_GE(g->stopped(), 1U);
  EXPECT_EQ(threads_settled_to(threads), threads);
}

TEST(loader_lifetime_test, DestroyMidEpochWithSlowReads) {
  auto const threads = baseline_threads();
  auto data = std::make_shared<sleepy_dataset>(
      400, [](std::size_t i) { return std::chrono::microseconds{200 + (i % 5) * 100}; }, 8);
  for (int round = 0; round < 3; ++round) {
    auto o = small_options(4, 4);
    o.prefetch_depth = 6;
    loader l{data, o};
    for (int i = 0; i < 2 + round; ++i) ASSERT_TRUE(l.next().has_value());
  }
  EXPECT_EQ(threads_settled_to(threads), threads);
}

TEST(loader_lifetime_test, DatasetReleasedWithTheLoader) {
  auto const datasets_before = lifetime_counter<echo_dataset>::alive();
  std::weak_ptr<echo_dataset> watch;
  {
    auto data = std::make_shared<echo_dataset>(32);
    watch = data;
    loader l{data, small_options(4, 2)};
    data.reset();
    EXPECT_FALSE(watch.expired()) << "the loader must share ownership of its dataset";
    (void)drain_epoch(l);
  }
  EXPECT_TRUE(watch.expired()) << "a destroyed loader still holds its dataset";
  EXPECT_EQ(lifetime_counter<echo_dataset>::alive(), datasets_before);
}

TEST(loader_lifetime_test, IndependentLoadersInParallel) {
  auto const threads = baseline_threads();
  auto data = std::make_shared<echo_dataset>(120, 8);
  std::vector<std::thread> consumers;
  std::vector<std::vector<std::size_t>> results(3);
  for (std::size_t c = 0; c < 3; ++c) {
    consumers.emplace_back([&, c] {
      auto o = small_options(4, 2);
      o.shuffle = true;
      o.seed = 100 + c;
      loader l{data, o};
      results[c] = flatten(drain_epoch(l, 8));
    });
  }
  for (auto& t : consumers) t.join();
  for (std::size_t c = 0; c < 3; ++c) {
    EXPECT_EQ(results[c], gpufeed::sampler(120, true, 100 + c).epoch_indices(0));
  }
  EXPECT_EQ(threads_settled_to(threads), threads);
}

// ------------------------------------------------------------------------------------------------
// No growth.

TEST(loader_lifetime_test, NoGrowthOverManyLoaders) {
  // One info line per loader would drown the output.
  if (std::getenv("GPUFEED_LOG_LEVEL") == nullptr) gpufeed::set_log_level("warn");
  std::size_t const iterations = scaled(1000, 200);
  auto data = std::make_shared<echo_dataset>(64, 64);
  auto o = small_options(4, 2);
  o.prefetch_depth = 2;
  o.shuffle = true;
  auto run_once = [&](std::size_t i) {
    o.seed = i;
    std::optional<gpufeed::batch> kept;
    {
      loader l{data, o};
      for (int k = 0; k < 3; ++k) {
        auto b = l.next();
        ASSERT_TRUE(b.has_value());
        ASSERT_TRUE(echo_content_matches(*b, 64));
        if (k == 0 && i % 3 == 0) kept = std::move(b);  // sometimes a lease outlives the loader
      }
    }
    if (kept) {
      ASSERT_TRUE(echo_content_matches(*kept, 64));
    }
  };
  for (std::size_t i = 0; i < 5; ++i) run_once(i);  // warm-up: allocator pools, logger, TLS
  auto const threads = baseline_threads();
  auto const fds = fd_count();
  auto const rss = rss_bytes();
  for (std::size_t i = 0; i < iterations; ++i) {
    run_once(i);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_EQ(threads_settled_to(threads), threads) << "worker threads leaked";
  EXPECT_LE(fd_count(), fds) << "file descriptors leaked";
  auto const grown = rss_bytes() > rss ? rss_bytes() - rss : 0;
  EXPECT_LT(grown, std::size_t{64} << 20)
      << "RSS grew by " << (grown >> 20) << " MiB over " << iterations << " loaders";
}

}  // namespace
