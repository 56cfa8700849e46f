// Orders given by the caller (loader_options::order = sample_order::given): a sampler or batch
// sampler of the user's own decides each epoch's indices and, optionally, its batch sizes.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::epoch_order;
using gpufeed::loader;
using gpufeed::sample_order;
using namespace gpufeed::test;  // NOLINT(google-build-using-namespace): test doubles

gpufeed::loader_options given_options(std::size_t batch_size, unsigned workers) {
  auto o = small_options(batch_size, workers);
  o.order = sample_order::given;
  return o;
}

std::vector<std::size_t> shuffled(std::size_t n, std::uint32_t seed) {
  std::vector<std::size_t> v(n);
  std::iota(v.begin(), v.end(), std::size_t{0});
  std::mt19937 rng{seed};
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

// The order cut into batches of `batch_size` (a short last one kept).
std::vector<std::vector<std::size_t>> cut(std::vector<std::size_t> const& order,
                                          std::size_t batch_size) {
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t first = 0; first < order.size(); first += batch_size) {
    auto const last = std::min(order.size(), first + batch_size);
    out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(first),
                     order.begin() + static_cast<std::ptrdiff_t>(last));
  }
  return out;
}

TEST(given_order_test, DeliversTheGivenIndicesInOrderForAnyWorkerCount) {
  std::size_t const n = 90;
  auto data = std::make_shared<echo_dataset>(n, 6);
  for (unsigned workers : {1U, 3U, 8U}) {
    SCOPED_TRACE(::testing::Message() << "workers=" << workers);
    loader l{data, given_options(8, workers)};
    for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
      // Repeats and a subset, as a sampler with replacement would give.
      auto order = shuffled(n, static_cast<std::uint32_t>(epoch + 1));
      order.resize(70);
      order.push_back(order.front());
      l.set_epoch(epoch, epoch_order{.indices = order});
      EXPECT_EQ(l.batches_per_epoch(), (order.size() + 7) / 8);
      EXPECT_EQ(l.samples_per_epoch(), order.size());
      EXPECT_EQ(index_lists(drain_epoch(l, 6)), cut(order, 8)) << "epoch " << epoch;
    }
  }
}

TEST(given_order_test, BatchSizesFromABatchSamplerAreKept) {
  auto data = std::make_shared<echo_dataset>(50, 4);
  auto o = given_options(6, 3);
  o.accumulation_steps = 2;
  loader l{data, o};
  std::vector<std::size_t> const sizes{6, 1, 4, 6, 2};
  auto const order = shuffled(19, 4);
  l.set_epoch(0, epoch_order{.indices = order, .batch_sizes = sizes});
  std::size_t first = 0;
  std::size_t b = 0;
  while (auto batch = l.next()) {
    ASSERT_LT(b, sizes.size());
    ASSERT_EQ(batch->size(), sizes[b]);
    std::vector<std::size_t> const want(
        order.begin() + static_cast<std::ptrdiff_t>(first),
        order.begin() + static_cast<std::ptrdiff_t>(first + sizes[b]));
    EXPECT_EQ(std::vector<std::size_t>(batch->indices().begin(), batch->indices().end()), want);
    EXPECT_TRUE(echo_content_matches(*batch, 4));
    auto const step = batch->step();
    EXPECT_EQ(step.step, b / 2);
    auto const in_step = b / 2 == 2 ? sizes[4] : sizes[b / 2 * 2] + sizes[b / 2 * 2 + 1];
    EXPECT_EQ(step.samples_in_step, in_step) << "batch " << b;
    first += sizes[b];
    ++b;
  }
  EXPECT_EQ(b, sizes.size());
}

TEST(given_order_test, NextWithoutAnOrderSaysWhatToDo) {
  auto data = std::make_shared<echo_dataset>(10);
  loader l{data, given_options(2, 2)};
  try {
    (void)l.next();
    FAIL() << "next() ran without an order";
  } catch (gpufeed::logic_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("set_epoch(0, order)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(l.batches_per_epoch(), 0U);
  // After the epoch ends, the next one needs its own order too; nothing runs ahead without it.
  l.set_epoch(0, epoch_order{.indices = {3, 1, 2}});
  EXPECT_EQ(index_lists(drain_epoch(l)), (std::vector<std::vector<std::size_t>>{{3, 1}, {2}}));
  EXPECT_EQ(l.epoch(), 1U);
  EXPECT_THROW((void)l.next(), gpufeed::logic_error);
  l.set_epoch(1, epoch_order{.indices = {0}});
  EXPECT_EQ(index_lists(drain_epoch(l)), (std::vector<std::vector<std::size_t>>{{0}}));
}

TEST(given_order_test, BadOrdersAreRefusedWithTheirPosition) {
  auto data = std::make_shared<echo_dataset>(10);
  loader l{data, given_options(4, 2)};
  try {
    l.set_epoch(0, epoch_order{.indices = {1, 2, 10, 3}});
    FAIL() << "index 10 of a 10-sample dataset was accepted";
  } catch (gpufeed::logic_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("index 10 at position 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(l.set_epoch(0, epoch_order{.indices = {1, 2, 3}, .batch_sizes = {2, 2}}),
               gpufeed::logic_error);
  EXPECT_THROW(l.set_epoch(0, epoch_order{.indices = {1, 2, 3, 4, 5}, .batch_sizes = {5}}),
               gpufeed::logic_error);  // above batch_size
  // A builtin-order loader refuses orders.
  loader builtin{data, small_options(4, 2)};
  EXPECT_THROW(builtin.set_epoch(0, epoch_order{.indices = {1}}), gpufeed::logic_error);
}

TEST(given_order_test, ANewOrderMidEpochDiscardsThePreparedBatches) {
  std::size_t const n = 64;
  auto data = std::make_shared<echo_dataset>(n, 5);
  loader l{data, given_options(4, 3)};
  auto const first = shuffled(n, 7);
  l.set_epoch(0, epoch_order{.indices = first});
  auto held = l.next();
  ASSERT_TRUE(held.has_value());
  auto second = shuffled(n, 8);
  second.resize(20);
  l.set_epoch(0, epoch_order{.indices = second});
  EXPECT_EQ(index_lists(drain_epoch(l, 5)), cut(second, 4));
  // The batch taken from the first order keeps its samples.
  EXPECT_EQ(std::vector<std::size_t>(held->indices().begin(), held->indices().end()),
            cut(first, 4).front());
  EXPECT_TRUE(echo_content_matches(*held, 5));
}

TEST(given_order_test, RestoreResumesWithinTheGivenOrder) {
  std::size_t const n = 40;
  auto data = std::make_shared<echo_dataset>(n, 3);
  auto const order = shuffled(n, 11);
  loader l{data, given_options(4, 2)};
  l.set_epoch(0, epoch_order{.indices = order});
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(l.next().has_value());
  }
  auto const state = l.state();

  loader resumed{data, given_options(4, 5)};
  EXPECT_THROW(resumed.restore(state), gpufeed::logic_error);  // no order for epoch 0 yet
  resumed.set_epoch(0, epoch_order{.indices = order});
  resumed.restore(state);
  auto want = cut(order, 4);
  want.erase(want.begin(), want.begin() + 3);
  EXPECT_EQ(index_lists(drain_epoch(resumed, 3)), want);
}

TEST(given_order_test, ReadSeedsFollowTheIndexAsInTheBuiltinOrder) {
  // Augmentation seeds are a function of (seed, epoch, index): the same sample gets the same
  // seed whichever order delivers it.
  auto data = std::make_shared<echo_dataset>(12);
  auto o = given_options(3, 2);
  o.seed = 77;
  loader l{data, o};
  l.set_epoch(2, epoch_order{.indices = {5, 0, 11}});
  auto b = l.next();
  ASSERT_TRUE(b.has_value());
  auto const context = b->field("context").as<std::int64_t>();  // [epoch, worker, seed] each
  std::vector<std::size_t> const indices{5, 0, 11};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(context[3 * i], 2);
    EXPECT_EQ(static_cast<std::uint64_t>(context[3 * i + 2]), gpufeed::mix_seed(77, 2, indices[i]));
  }
}

}  // namespace
