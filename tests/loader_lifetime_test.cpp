// Lifetimes: leases, destruction in every state, and no growth over many loaders.

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

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "gpufeed/gpufeed.hpp"
#include "support/log_capture.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::loader;
using gpufeed::loader_options;
using namespace gpufeed::test;  // NOLINT(google-build-using-namespace): test doubles

// Threads of the process with no loader alive (after any sanitizer helper thread has started).
std::size_t baseline_threads() {
  std::thread{[] {}}.join();
  return threads_settled_to(thread_count());
}

std::vector<std::size_t> indices_of(gpufeed::batch const& b) {
  return {b.indices().begin(), b.indices().end()};
}

// ------------------------------------------------------------------------------------------------
// Leases.

TEST(loader_lifetime_test, LeasedSlotIsNeverReused) {
  std::size_t const n = 200;
  std::size_t const payload = 8;
  auto data = std::make_shared<echo_dataset>(n, payload);
  auto o = small_options(2, 3);
  o.prefetch_depth = 3;
  o.shuffle = true;
  o.seed = 5;
  loader l{data, o};
  auto held = l.next();
  ASSERT_TRUE(held.has_value());
  auto const held_indices = indices_of(*held);
  auto const* const held_data = held->field("payload").data();
  std::size_t consumed = 1;
  // Through the rest of this epoch and all of the next, re-checking the held batch each time.
  for (int epoch = 0; epoch < 2; ++epoch) {
    while (auto b = l.next()) {
      ++consumed;
      EXPECT_NE(b->field("payload").data(), held_data) << "a leased slot was handed out again";
      ASSERT_TRUE(echo_content_matches(*b, payload));
      ASSERT_EQ(indices_of(*held), held_indices) << "after " << consumed << " batches";
      ASSERT_TRUE(echo_content_matches(*held, payload)) << "after " << consumed << " batches";
    }
  }
  EXPECT_EQ(consumed, 2 * n / 2);
}

TEST(loader_lifetime_test, TwoLeasesLeaveOneSlotCycling) {
  std::size_t const n = 60;
  auto data = std::make_shared<echo_dataset>(n, 4);
  auto o = small_options(3, 2);
  o.prefetch_depth = 3;
  loader l{data, o};
  auto first = l.next();
  auto second = l.next();
  ASSERT_TRUE(first && second);
  std::size_t seen = 2;
  while (auto b = l.next()) {
    ++seen;
    ASSERT_TRUE(echo_content_matches(*b, 4));
    ASSERT_TRUE(echo_content_matches(*first, 4));
    ASSERT_TRUE(echo_content_matches(*second, 4));
  }
  EXPECT_EQ(seen, n / 3);
  EXPECT_EQ(index_column(*first), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(index_column(*second), (std::vector<std::size_t>{3, 4, 5}));
}

TEST(loader_lifetime_test, AllSlotsLeasedThrowsInsteadOfHangingWhenTheRingMayNotGrow) {
  for (std::size_t depth : {1U, 3U}) {
    SCOPED_TRACE(::testing::Message() << "prefetch_depth=" << depth);
    auto data = std::make_shared<echo_dataset>(40);
    auto o = small_options(4, 2);
    o.prefetch_depth = depth;
    o.held_batches_budget = 0;  // no growth: the old contract
    loader l{data, o};
    std::vector<gpufeed::batch> held;
    for (std::size_t i = 0; i < depth; ++i) {
      auto b = l.next();
      ASSERT_TRUE(b.has_value());
      held.push_back(std::move(*b));
    }
    try {
      (void)l.next();
      FAIL() << "next() with every slot leased and no growth allowed did not throw";
    } catch (gpufeed::logic_error const& e) {
      EXPECT_TRUE(contains_token(e.what(), "held_batches_budget")) << e.what();
    }
    EXPECT_THROW((void)l.next(), gpufeed::logic_error);
    EXPECT_EQ(l.snapshot().ring_capacity, depth);
    // Giving one back unblocks the loader; the failed calls consumed nothing.
    held.front().release();
    auto b = l.next();
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->sequence(), depth);
    EXPECT_TRUE(echo_content_matches(*b, 0));
    for (auto const& h : held) {
      if (h) {
        EXPECT_TRUE(echo_content_matches(h, 0));
      }
    }
  }
}

// Held batches (design.md, item 8): a consumer that keeps every batch alive gets more memory,
// as with PyTorch's loaders, not an error; each held batch keeps its content.
TEST(loader_lifetime_test, HeldBatchesGrowTheRingWithOneWarning) {
  std::size_t const n = 64;
  std::size_t const payload = 12;
  auto data = std::make_shared<echo_dataset>(n, payload);
  auto o = small_options(4, 3);
  o.prefetch_depth = 2;
  o.shuffle = true;
  o.seed = 9;
  gpufeed::test::log_capture log;
  std::vector<gpufeed::batch> held;
  {
    loader l{data, o};
    auto const want = expected_batches(n, o, 0);
    for (std::size_t i = 0; i < want.size(); ++i) {
      auto b = l.next();
      ASSERT_TRUE(b.has_value()) << "batch " << i;
      ASSERT_EQ(indices_of(*b), want[i]) << "batch " << i;
      held.push_back(std::move(*b));
    }
    EXPECT_FALSE(l.next().has_value());
    auto const st = l.snapshot();
    // Every batch of the epoch is held at once: the ring grew to one slot per batch, plus at
    // most the slots the workers filled ahead into the next epoch.
    EXPECT_GE(st.ring_capacity, want.size());
    EXPECT_EQ(st.ring_grown, st.ring_capacity - o.prefetch_depth);
    EXPECT_GE(st.ring_max_slots, st.ring_capacity);
    EXPECT_EQ(st.ring_leased, want.size());
    EXPECT_EQ(st.host_bytes, st.ring_capacity * st.slot_bytes);
  }
  // The batches outlive the loader, each still holding its own samples.
  for (auto const& b : held) {
    EXPECT_TRUE(echo_content_matches(b, payload));
  }
  EXPECT_EQ(log.count("ring slots are leased to batches that are still alive"), 1U);
}

TEST(loader_lifetime_test, HeldBatchesStopAtTheBudgetWithAClearError) {
  // Small samples in large batches: each slot's per-sample lists (32 bytes a sample) weigh as
  // much as its batch, and the budget must count them (it once counted the batch alone, and let
  // the ring grow to 8 slots here).
  auto data = std::make_shared<echo_dataset>(640);
  auto o = small_options(64, 2);
  o.prefetch_depth = 2;
  auto const probe = loader{data, o}.snapshot();
  auto const per_slot = probe.slot_bytes + probe.bookkeeping_bytes / probe.ring_capacity;
  ASSERT_EQ(probe.bookkeeping_bytes, probe.ring_capacity * 64 * 32);
  o.held_batches_budget = 5 * per_slot;  // room for five slots, lists included
  ASSERT_GE(*o.held_batches_budget / probe.slot_bytes, 8U) << "the test tells nothing";
  loader l{data, o};
  std::vector<gpufeed::batch> held;
  for (std::size_t i = 0; i < 5; ++i) {
    auto b = l.next();
    ASSERT_TRUE(b.has_value()) << "batch " << i << " of 5 should fit in the budget";
    held.push_back(std::move(*b));
  }
  try {
    (void)l.next();
    FAIL() << "a sixth held batch was allowed beyond a budget of five slots";
  } catch (gpufeed::logic_error const& e) {
    std::string const what = e.what();
    EXPECT_TRUE(contains_token(what, "held_batches_budget")) << what;
    EXPECT_NE(what.find("limit of 5 slots"), std::string::npos) << what;
  }
  auto const st = l.snapshot();
  EXPECT_EQ(st.ring_capacity, 5U);
  EXPECT_LE(st.host_bytes + st.bookkeeping_bytes, *o.held_batches_budget);
  // Releasing one lets the epoch go on, in order.
  held.erase(held.begin());
  auto b = l.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->sequence(), 5U);
  EXPECT_TRUE(echo_content_matches(*b, 0));
}

TEST(loader_lifetime_test, RingThatGrewKeepsDeliveringInOrderAfterTheBatchesGo) {
  // Slots added for held batches are ordinary slots afterwards: the epoch and the next run on.
  std::size_t const n = 120;
  auto data = std::make_shared<echo_dataset>(n, 8);
  auto o = small_options(4, 3);
  o.prefetch_depth = 2;
  loader l{data, o};
  std::vector<gpufeed::batch> held;
  for (int i = 0; i < 6; ++i) {
    auto b = l.next();
    ASSERT_TRUE(b.has_value());
    held.push_back(std::move(*b));
  }
  held.clear();
  auto rest = drain_epoch(l, 8);
  auto want = expected_batches(n, o, 0);
  want.erase(want.begin(), want.begin() + 6);
  EXPECT_EQ(index_lists(rest), want);
  EXPECT_EQ(index_lists(drain_epoch(l, 8)), expected_batches(n, o, 1));
  EXPECT_GE(l.snapshot().ring_grown, 4U);
}

TEST(loader_lifetime_test, LeaseSurvivesSetEpochAndRestore) {
  // Discarding prepared batches (set_epoch, restore) must leave leased slots alone.
  std::size_t const n = 48;
  auto data = std::make_shared<echo_dataset>(n, 6);
  auto o = small_options(4, 3);
  o.prefetch_depth = 3;
  o.shuffle = true;
  o.seed = 15;
  loader l{data, o};
  auto held = l.next();
  ASSERT_TRUE(held.has_value());
  auto const held_indices = indices_of(*held);
  auto const state = l.state();
  l.set_epoch(4);
  EXPECT_EQ(index_lists(drain_epoch(l, 6)), expected_batches(n, o, 4));
  EXPECT_EQ(indices_of(*held), held_indices);
  EXPECT_TRUE(echo_content_matches(*held, 6));
  l.restore(state);
  auto rest = drain_epoch(l, 6);
  auto want = expected_batches(n, o, 0);
  want.erase(want.begin());
  EXPECT_EQ(index_lists(rest), want);
  EXPECT_EQ(indices_of(*held), held_indices);
  EXPECT_TRUE(echo_content_matches(*held, 6));
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

// Idle workers poll briefly before they park, and release() wakes a parked worker only when no
// worker is polling. A consumer whose pace straddles the polling window (releases that come at
// once, just inside, just outside, and long after it) exercises every hand-over between the two;
// a lost wake-up would leave a free slot unfilled and surface here as a timeout_error.
TEST(loader_lifetime_test, NoLostWakeUpsAroundTheIdlePollWindow) {
  using namespace std::chrono_literals;
  constexpr std::chrono::microseconds paces[] = {0us, 20us, 45us, 55us, 120us, 400us};
  for (unsigned workers : {1U, 2U, 3U}) {
    auto data = std::make_shared<echo_dataset>(97);
    auto o = small_options(5, workers);
    o.prefetch_depth = 2;
    o.timeout = 20s;
    loader l{data, o};
    std::size_t expected_sequence = 0;
    std::size_t delivered = 0;
    for (std::size_t i = 0; i < 240; ++i) {
      auto b = l.next();
      if (!b) {
        expected_sequence = 0;
        continue;
      }
      ASSERT_EQ(b->sequence(), expected_sequence) << "workers " << workers << ", batch " << i;
      ++expected_sequence;
      delivered += b->size();
      b->release();
      std::this_thread::sleep_for(paces[i % std::size(paces)]);
    }
    // 240 calls over epochs of 20 batches (19 of 5 samples and one of 2) and their ends: 11
    // whole epochs (231 calls, 1067 samples), then 9 batches more.
    EXPECT_EQ(delivered, 11U * 97U + 9U * 5U) << "workers " << workers;
  }
}

// ------------------------------------------------------------------------------------------------
// No log call while the loader's mutex is held: a log line can take milliseconds (a slow sink, a
// full pipe), and workers, the consumer and snapshot() would all wait for it.

namespace {

// On each message from gpufeed, checks from another thread that the loader's mutex is free: the
// probe takes a snapshot (which needs that mutex) and the sink waits for it. A message logged
// with the mutex held stops the probe until the sink returns, so it never finishes in time, and
// the message is kept as evidence.
class mutex_probe_sink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void watch(gpufeed::loader const* l) { target_.store(l); }
  // Joins the probes still running: call once the loader's calls have returned.
  void join_probes() {
    std::lock_guard const lock{mutex_};
    for (auto& t : probes_) t.join();
    probes_.clear();
  }
  std::vector<std::string> under_lock() {
    std::lock_guard const lock{mutex_};
    return under_lock_;
  }
  std::vector<std::string> probed() {
    std::lock_guard const lock{mutex_};
    return probed_;
  }

 protected:
  void sink_it_(spdlog::details::log_msg const& message) override {
    auto const* l = target_.load();
    if (l == nullptr || !under_lock_.empty()) return;  // one piece of evidence is enough
    std::string text{message.payload.data(), message.payload.size()};
    auto done = std::make_shared<std::promise<void>>();
    auto finished = done->get_future();
    probes_.emplace_back([l, done] {
      (void)l->snapshot();
      done->set_value();
    });
    if (finished.wait_for(std::chrono::seconds{20}) != std::future_status::ready) {
      under_lock_.push_back(text);
    }
    probed_.push_back(std::move(text));
  }
  void flush_() override {}

 private:
  std::atomic<gpufeed::loader const*> target_{nullptr};
  std::vector<std::thread> probes_;
  std::vector<std::string> probed_;
  std::vector<std::string> under_lock_;
};

// Attaches a probe sink to gpufeed's logger for its lifetime (at info level).
class probed_log {
 public:
  probed_log() : sink_{std::make_shared<mutex_probe_sink>()} {
    gpufeed::set_log_level("info");
    gpufeed::logger()->sinks().push_back(sink_);
  }
  ~probed_log() {
    sink_->join_probes();
    auto& sinks = gpufeed::logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  probed_log(probed_log const&) = delete;
  probed_log& operator=(probed_log const&) = delete;
  mutex_probe_sink& sink() { return *sink_; }

 private:
  std::shared_ptr<mutex_probe_sink> sink_;
};

std::size_t containing(std::vector<std::string> const& lines, std::string const& text) {
  return static_cast<std::size_t>(std::count_if(lines.begin(), lines.end(), [&](auto const& l) {
    return l.find(text) != std::string::npos;
  }));
}

}  // namespace

TEST(loader_lifetime_test, NoLogCallWhileTheLoaderMutexIsHeld) {
  using namespace std::chrono_literals;
  probed_log log;
  {  // skipped samples (once logged with the mutex held)
    auto data = std::make_shared<failing_dataset>(40, std::set<std::size_t>{2, 9, 30});
    auto o = small_options(4, 2);
    o.on_error = gpufeed::error_policy::skip;
    loader l{data, o};
    log.sink().watch(&l);
    (void)drain_epoch(l);
    log.sink().watch(nullptr);
    log.sink().join_probes();
  }
  {  // a stall warning, then held batches growing the ring
    auto g = std::make_shared<gate>();
    auto data = std::make_shared<gated_dataset>(64, g, std::set<std::size_t>{1}, false);
    auto o = small_options(4, 2);
    o.prefetch_depth = 2;
    o.stall_warning = 10ms;
    loader l{data, o};
    log.sink().watch(&l);
    std::thread opener{[&] {
      (void)eventually([&] { return containing(log.sink().probed(), "has waited") > 0; });
      g->open();
    }};
    std::vector<gpufeed::batch> held;
    for (int i = 0; i < 5; ++i) {
      auto b = l.next();
      ASSERT_TRUE(b.has_value());
      held.push_back(std::move(*b));
    }
    opener.join();
    log.sink().watch(nullptr);
    log.sink().join_probes();
  }
  {  // an automatic depth deepened by a consumer that holds every slot
    auto data = std::make_shared<echo_dataset>(100);
    auto o = small_options(4, 2);
    o.prefetch_depth = gpufeed::auto_depth;
    loader l{data, o};
    log.sink().watch(&l);
    std::vector<gpufeed::batch> held;
    for (int i = 0; i < 4; ++i) {
      auto b = l.next();
      ASSERT_TRUE(b.has_value());
      held.push_back(std::move(*b));
    }
    log.sink().watch(nullptr);
    log.sink().join_probes();
  }
  auto const probed = log.sink().probed();
  EXPECT_EQ(containing(probed, "skipped sample"), 3U);
  EXPECT_GE(containing(probed, "has waited"), 1U);
  EXPECT_EQ(containing(probed, "ring slots are leased"), 1U);
  EXPECT_GE(containing(probed, "autotune at batch"), 1U);
  EXPECT_EQ(log.sink().under_lock(), std::vector<std::string>{})
      << "logged while the loader's mutex was held";
}
