// Late reads: timeout_error naming the late sample, and try_next_for's bounded wait that leaves
// the batch in place.

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::loader;
using namespace gpufeed::test;  // NOLINT(google-build-using-namespace): test doubles

// ------------------------------------------------------------------------------------------------
// Timeout

TEST(loader_errors_test, TimeoutNamesTheLateSample) {
  std::size_t const n = 16;
  auto g = std::make_shared<gate>();
  auto data = std::make_shared<gated_dataset>(n, g, std::set<std::size_t>{13});
  auto o = small_options(4, 2);
  o.timeout = std::chrono::milliseconds{50};
  loader l{data, o};
  for (std::uint64_t s = 0; s < 3; ++s) {
    auto b = l.next();
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->sequence(), s);
  }
  ASSERT_TRUE(g->wait_entered(1));
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      (void)l.next();
      FAIL() << "sample 13 is blocked, so batch 3 cannot be ready";
    } catch (gpufeed::timeout_error const& e) {
      EXPECT_EQ(e.index(), 13U);
      EXPECT_TRUE(contains_token(e.what(), "13")) << e.what();
    }
  }
  // The batch was not consumed: once the read returns, it arrives.
  g->open();
  auto b = l.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->sequence(), 3U);
  EXPECT_EQ(index_column(*b), (std::vector<std::size_t>{12, 13, 14, 15}));
  EXPECT_TRUE(echo_content_matches(*b, 0));
  b.reset();
  EXPECT_FALSE(l.next().has_value());
  EXPECT_EQ(index_lists(drain_epoch(l)), expected_batches(n, o, 1));
}

TEST(loader_errors_test, TimeoutOnFirstBatch) {
  auto g = std::make_shared<gate>();
  auto data = std::make_shared<gated_dataset>(8, g, std::set<std::size_t>{2});
  auto o = small_options(4, 2);
  o.timeout = std::chrono::milliseconds{20};
  loader l{data, o};
  try {
    (void)l.next();
    FAIL() << "sample 2 is blocked";
  } catch (gpufeed::timeout_error const& e) {
    EXPECT_EQ(e.index(), 2U);
  }
  g->open();
  auto records = drain_epoch(l);
  EXPECT_EQ(records.size(), 2U);
  EXPECT_EQ(flatten(records), (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

// ------------------------------------------------------------------------------------------------
// try_next_for: a bounded wait that leaves the batch in place (the Python module polls it to
// notice Ctrl-C).

TEST(loader_errors_test, TryNextForReturnsPendingAndConsumesNothing) {
  std::size_t const n = 12;
  auto g = std::make_shared<gate>();
  auto data = std::make_shared<gated_dataset>(n, g, std::set<std::size_t>{5});
  loader l{data, small_options(4, 2)};
  auto first = l.try_next_for(std::chrono::seconds{60});
  ASSERT_EQ(first.what, gpufeed::next_result::status::ready);
  ASSERT_TRUE(first.value.has_value());
  EXPECT_EQ(first.value->sequence(), 0U);
  ASSERT_TRUE(g->wait_entered(1));
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto r = l.try_next_for(std::chrono::milliseconds{attempt == 0 ? 0 : 5});
    EXPECT_EQ(r.what, gpufeed::next_result::status::pending) << "attempt " << attempt;
    EXPECT_FALSE(r.value.has_value());
  }
  g->open();
  auto second = l.try_next_for(std::chrono::seconds{60});
  ASSERT_EQ(second.what, gpufeed::next_result::status::ready);
  EXPECT_EQ(second.value->sequence(), 1U);
  EXPECT_EQ(index_column(*second.value), (std::vector<std::size_t>{4, 5, 6, 7}));
  auto third = l.try_next_for(std::chrono::seconds{60});
  ASSERT_EQ(third.what, gpufeed::next_result::status::ready);
  EXPECT_EQ(third.value->sequence(), 2U);
  auto end = l.try_next_for(std::chrono::seconds{60});
  EXPECT_EQ(end.what, gpufeed::next_result::status::end_of_epoch);
  EXPECT_EQ(l.epoch(), 1U);
}

TEST(loader_errors_test, TimeoutCountsAcrossPendingPolls) {
  // Each poll is far shorter than the timeout, and the polls together outlast it: the timeout
  // must still fire (it counts from the first poll), naming the late sample.
  auto g = std::make_shared<gate>();
  auto data = std::make_shared<gated_dataset>(8, g, std::set<std::size_t>{1});
  auto o = small_options(4, 2);
  o.timeout = std::chrono::milliseconds{60};
  loader l{data, o};
  bool timed_out = false;
  for (int poll = 0; poll < 100'000 && !timed_out; ++poll) {
    try {
      auto r = l.try_next_for(std::chrono::milliseconds{1});
      ASSERT_EQ(r.what, gpufeed::next_result::status::pending);
    } catch (gpufeed::timeout_error const& e) {
      EXPECT_EQ(e.index(), 1U);
      timed_out = true;
    }
  }
  EXPECT_TRUE(timed_out) << "polls of 1 ms never reached a 60 ms timeout";
  g->open();
  auto records = drain_epoch(l);
  EXPECT_EQ(flatten(records), (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

}  // namespace
