// The loader's epochs: set_epoch keeps or restarts the prefetched batches, prefetch crosses the
// epoch boundary, and epochs without batches still advance.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::loader;
using gpufeed::tail_policy;
using namespace gpufeed::test;  // NOLINT(google-build-using-namespace): test doubles

// ------------------------------------------------------------------------------------------------
// set_epoch.

TEST(loader_test, SetEpochCurrentKeepsPrefetchedBatches) {
  std::size_t const n = 24;
  auto data = std::make_shared<echo_dataset>(n);
  auto o = small_options(4, 2);
  o.prefetch_depth = 3;
  o.shuffle = true;
  o.seed = 12;
  loader l{data, o};
  // Let the ring fill with epoch 0, then say "epoch 0" again: nothing is re-read.
  ASSERT_TRUE(wait_ready(l, 3)) << "the ring never filled";
  // Three full slots of 4 and no consumer: exactly 12 samples read, and no slot free for more.
  auto const read_before = l.snapshot().samples_read;
  EXPECT_EQ(read_before, 12U);
  l.set_epoch(0);
  EXPECT_EQ(l.epoch(), 0U);
  EXPECT_EQ(l.snapshot().samples_read, read_before);
  auto e0 = drain_epoch(l);
  EXPECT_EQ(index_lists(e0), expected_batches(n, o, 0));
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(data->reads(0, i), 1U) << "index " << i;

  // The same at the boundary: after the end, the loader stands at epoch 1 and prefetches it.
  ASSERT_EQ(l.epoch(), 1U);
  ASSERT_TRUE(wait_ready(l, 3));
  l.set_epoch(1);
  auto e1 = drain_epoch(l);
  EXPECT_EQ(index_lists(e1), expected_batches(n, o, 1));
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(data->reads(1, i), 1U) << "index " << i;
}

TEST(loader_test, SetEpochNextAfterLastBatchKeepsPrefetchedBatches) {
  // Training loops that count batches never see next()'s nullopt: they take exactly
  // batches_per_epoch() batches, then call set_epoch(e + 1). The prefetched batches of e + 1
  // must be kept (each sample read once) and the new epoch must not come out empty.
  std::size_t const n = 24;
  auto data = std::make_shared<echo_dataset>(n);
  auto o = small_options(4, 2);
  o.prefetch_depth = 3;
  o.shuffle = true;
  o.seed = 21;
  loader l{data, o};
  for (std::size_t b = 0; b < l.batches_per_epoch(); ++b) {
    ASSERT_TRUE(l.next().has_value()) << "batch " << b;
  }
  ASSERT_TRUE(wait_ready(l, 3)) << "epoch 1 was not prefetched";
  l.set_epoch(1);
  EXPECT_EQ(l.epoch(), 1U);
  auto e1 = drain_epoch(l);
  EXPECT_EQ(index_lists(e1), expected_batches(n, o, 1));
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(data->reads(1, i), 1U) << "index " << i;
}

TEST(loader_test, SetEpochOtherRestartsAtBatchZero) {
  std::size_t const n = 40;
  auto data = std::make_shared<echo_dataset>(n, 3);
  auto o = small_options(4, 3);
  o.shuffle = true;
  o.seed = 13;
  loader l{data, o};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(l.next().has_value());
  l.set_epoch(5);
  EXPECT_EQ(l.epoch(), 5U);
  auto e5 = drain_epoch(l, 3);
  ASSERT_FALSE(e5.empty());
  EXPECT_EQ(e5.front().sequence, 0U);
  for (auto const& r : e5) EXPECT_EQ(r.epoch, 5U);
  EXPECT_EQ(index_lists(e5), expected_batches(n, o, 5));
  EXPECT_EQ(l.epoch(), 6U);

  // Mid-epoch to an earlier epoch, too.
  ASSERT_TRUE(l.next().has_value());
  l.set_epoch(2);
  EXPECT_EQ(index_lists(drain_epoch(l, 3)), expected_batches(n, o, 2));
  EXPECT_EQ(l.epoch(), 3U);
}

TEST(loader_test, PrefetchCrossesEpochBoundary) {
  std::size_t const n = 18;
  auto data = std::make_shared<echo_dataset>(n);
  auto o = small_options(4, 2);
  o.shuffle = true;
  o.seed = 14;
  loader l{data, o};
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    EXPECT_EQ(l.epoch(), epoch);
    std::vector<std::vector<std::size_t>> got;
    std::uint64_t sequence = 0;
    for (auto& b : l) {  // range-for: one epoch
      EXPECT_EQ(b.epoch(), epoch);
      EXPECT_EQ(b.sequence(), sequence++);
      EXPECT_TRUE(echo_content_matches(b, 0));
      got.emplace_back(b.indices().begin(), b.indices().end());
    }
    EXPECT_EQ(got, expected_batches(n, o, epoch));
    EXPECT_EQ(l.epoch(), epoch + 1);
  }
  // A loader that is told the epoch explicitly each time gives the same.
  loader m{data, o};
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    m.set_epoch(epoch);
    EXPECT_EQ(index_lists(drain_epoch(m)), expected_batches(n, o, epoch));
  }
}

TEST(loader_test, EpochWithoutBatches) {
  // Fewer samples than one batch and the tail dropped, or no samples at all: every epoch is
  // empty, next() says so at once, and the epochs still advance.
  for (std::size_t n : {0U, 3U}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    auto data = std::make_shared<echo_dataset>(n);
    auto o = small_options(4, 2);
    o.last_batch = tail_policy::drop;
    loader l{data, o};
    EXPECT_EQ(l.batches_per_epoch(), 0U);
    EXPECT_EQ(l.steps_per_epoch(), 0U);
    EXPECT_EQ(l.samples_per_epoch(), 0U);
    for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
      EXPECT_EQ(l.epoch(), epoch);
      EXPECT_FALSE(l.next().has_value());
    }
    EXPECT_EQ(l.snapshot().batches, 0U);
  }
}

}  // namespace
