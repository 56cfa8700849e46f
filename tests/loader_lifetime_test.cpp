// Lifetimes of leases: a leased slot is never reused, held batches grow the ring (with one
// warning, up to the budget), and a lease survives set_epoch and restore.

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
#include "support/log_capture.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::loader;
using namespace gpufeed::test;  // NOLINT(google-build-using-namespace): test doubles

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

}  // namespace
