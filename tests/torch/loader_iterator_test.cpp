// gpufeed::torch's iterators behave as libtorch's: begin() and end() of one type that standard
// algorithms take, copies that share their position, equality as libtorch defines it, the first
// batch asked for on first use, and errors (never the next epoch) past the end. Also what
// begin() does while an iteration is under way, and the batch sizes an epoch is cut into.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "gpufeed/torch.hpp"
#include "torch/torch_test_datasets.hpp"

namespace {

namespace gt = gpufeed::torch;
using torch::data::DataLoaderOptions;
using torch::data::samplers::SequentialSampler;
using torch::data::transforms::Stack;
using torch_test::index_dataset;
using torch_test::indices_in;

// Example i is the int i + 1 (examples that are not tensors take the slow path).
class count_dataset : public torch::data::datasets::Dataset<count_dataset, int> {
 public:
  explicit count_dataset(std::size_t n = 100) : n_{n} {}
  int get(std::size_t index) override { return static_cast<int>(index) + 1; }
  torch::optional<std::size_t> size() const override { return n_; }

 private:
  std::size_t n_;
};

// Every get() fails.
class failing_dataset : public torch::data::datasets::Dataset<failing_dataset> {
 public:
  torch::data::Example<> get(std::size_t index) override {
    throw std::invalid_argument{"no example " + std::to_string(index)};
  }
  torch::optional<std::size_t> size() const override { return 10; }
};

// The message of what `f` throws as gpufeed::logic_error (empty if it throws nothing).
template <class F>
std::string logic_error_of(F&& f) {
  try {
    f();
  } catch (gpufeed::logic_error const& e) {
    return e.what();
  }
  return {};
}

TEST(loader_iterator_test, BeginAndEndHaveOneTypeThatStandardAlgorithmsTake) {
  auto loader = gt::make_data_loader<SequentialSampler>(count_dataset{10}, 1);
  static_assert(std::is_same_v<decltype(loader->begin()), decltype(loader->end())>);
  static_assert(std::input_iterator<decltype(loader->begin())>);
  EXPECT_EQ(std::distance(loader->begin(), loader->end()), 10);
  std::vector<std::vector<int>> batches;
  std::copy(loader->begin(), loader->end(), std::back_inserter(batches));  // the next epoch
  std::vector<int> values;
  for (auto const& b : batches) values.insert(values.end(), b.begin(), b.end());
  std::vector<int> want(10);
  std::iota(want.begin(), want.end(), 1);
  EXPECT_EQ(values, want);
}

TEST(loader_iterator_test, StackedAndUnstackedLoadersTakeAlgorithmsToo) {
  auto stacked = gt::make_data_loader<SequentialSampler>(index_dataset{12}.map(Stack<>()), 4);
  EXPECT_EQ(std::distance(stacked->begin(), stacked->end()), 3);
  auto unstacked = gt::make_data_loader<SequentialSampler>(index_dataset{12}, 5);
  EXPECT_EQ(std::count_if(unstacked->begin(), unstacked->end(),
                          [](auto const& batch) { return batch.size() == 5; }),
            2);  // 5 + 5 + 2
}

TEST(loader_iterator_test, AnIteratorEqualsItselfAndItsCopiesAndEndEqualsEnd) {
  auto loader = gt::make_data_loader(count_dataset{}, 32);
  auto const begin = loader->begin();
  auto const copy = begin;
  EXPECT_TRUE(begin == begin);
  EXPECT_TRUE(begin == copy);
  EXPECT_TRUE(loader->end() == loader->end());
  EXPECT_FALSE(begin != copy);
}

TEST(loader_iterator_test, IteratorsOfTwoBeginsDiffer) {
  auto loader = gt::make_data_loader(count_dataset{}, 32);  // workers(0): begin() starts over
  auto i = loader->begin();
  auto j = loader->begin();
  EXPECT_NE(i, j);
  ++j;
  EXPECT_NE(i, j);
}

TEST(loader_iterator_test, AnIteratorEqualsEndOnceItsEpochIsOver) {
  auto loader = gt::make_data_loader(count_dataset{}, 25);
  auto it = loader->begin();
  for (int b = 0; b < 4; ++b) {
    ASSERT_NE(it, loader->end()) << "batch " << b;
    EXPECT_EQ(it->size(), 25U);
    ++it;
  }
  EXPECT_EQ(it, loader->end());
  EXPECT_EQ(loader->end(), it);
}

TEST(loader_iterator_test, CopiesShareTheirPosition) {
  auto loader = gt::make_data_loader<SequentialSampler>(count_dataset{}, 50);
  auto i = loader->begin();
  auto j = i;
  EXPECT_EQ((*j).front(), 1);
  ++i;
  EXPECT_EQ(j->front(), 51);  // j moved with i
  ++j;
  EXPECT_EQ(i, loader->end());
  EXPECT_EQ(j, loader->end());
}

TEST(loader_iterator_test, DereferencingTwiceGivesTheSameBatch) {
  auto loader = gt::make_data_loader<SequentialSampler>(count_dataset{}, 1);
  auto it = loader->begin();
  EXPECT_EQ(*it, std::vector<int>{1});
  EXPECT_EQ(*it, std::vector<int>{1});
  ++it;
  EXPECT_EQ(*it, std::vector<int>{2});
  EXPECT_EQ(*it, std::vector<int>{2});
}

TEST(loader_iterator_test, PastTheEndOfTheEpochIsAnErrorNotTheNextEpoch) {
  auto loader = gt::make_data_loader<SequentialSampler>(index_dataset{8}.map(Stack<>()), 8);
  auto it = loader->begin();
  EXPECT_EQ(indices_in(it->data).front(), 0);
  ++it;
  ASSERT_EQ(it, loader->end());
  auto const before = loader->loader().state();
  // Each message opens with libtorch's sentence for the same misuse, then says what to do.
  auto const incremented = logic_error_of([&] { ++it; });
  EXPECT_NE(incremented.find("Attempted to increment iterator past the end"), std::string::npos)
      << incremented;
  EXPECT_NE(incremented.find("call begin()"), std::string::npos) << incremented;
  auto const dereferenced = logic_error_of([&] { (void)*it; });
  EXPECT_NE(dereferenced.find("Attempted to dereference iterator that was past the end"),
            std::string::npos)
      << dereferenced;
  EXPECT_NE(dereferenced.find("epoch is over"), std::string::npos) << dereferenced;
  EXPECT_NE(logic_error_of([&] { (void)it->data; }).find("epoch is over"), std::string::npos);
  auto const after = loader->loader().state();  // nothing of the next epoch was consumed
  EXPECT_EQ(after.epoch, before.epoch);
  EXPECT_EQ(after.next_sequence, before.next_sequence);
  auto next = loader->begin();
  EXPECT_EQ(next->epoch, 1U);
  EXPECT_EQ(next->sequence, 0U);
}

TEST(loader_iterator_test, EndCannotBeDereferencedOrIncremented) {
  auto loader = gt::make_data_loader(count_dataset{}, 100);
  auto end = loader->end();
  auto const incremented = logic_error_of([&] { ++end; });
  EXPECT_NE(incremented.find("Incrementing the DataLoader's past-the-end iterator is not allowed"),
            std::string::npos)
      << incremented;
  auto const dereferenced = logic_error_of([&] { (void)*end; });
  EXPECT_NE(
      dereferenced.find("Dereferencing the DataLoader's past-the-end iterator is not allowed"),
      std::string::npos)
      << dereferenced;
}

TEST(loader_iterator_test, TheFirstBatchIsAskedForWhenTheIteratorIsFirstUsed) {
  auto loader =
      gt::make_data_loader(failing_dataset{}.map(Stack<>()), DataLoaderOptions().workers(2));
  auto it = loader->begin();  // asks for nothing yet: the failure comes from *it
  EXPECT_THROW((void)*it, gt::worker_exception);
}

TEST(loader_iterator_test, BeginWhileAnIterationIsUnderWayThrowsWithWorkerThreads) {
  auto loader = gt::make_data_loader(count_dataset{}, DataLoaderOptions(1).workers(2));
  auto it = loader->begin();
  auto const message = logic_error_of([&] { (void)loader->begin(); });
  EXPECT_NE(message.find("Attempted to get a new DataLoader iterator while another iterator is "
                         "not yet exhausted"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("still in use"), std::string::npos) << message;
}

TEST(loader_iterator_test, BeginAfterTheIterationIsLetGoStartsTheNextEpoch) {
  auto loader = gt::make_data_loader<SequentialSampler>(index_dataset{20}.map(Stack<>()),
                                                        DataLoaderOptions(5).workers(2));
  {
    auto it = loader->begin();
    EXPECT_EQ(it->epoch, 0U);
  }  // let go half-way
  auto it = loader->begin();
  EXPECT_EQ(it->epoch, 1U);
  EXPECT_EQ(it->sequence, 0U);
  while (it != loader->end()) ++it;
  EXPECT_NO_THROW((void)loader->begin());  // an iteration at its end is no obstacle
}

TEST(loader_iterator_test, EveryBeginRunsAWholeEpoch) {
  auto loader = gt::make_data_loader(count_dataset{}, 50);
  for (int epoch = 0; epoch < 3; ++epoch) {
    auto it = loader->begin();
    ASSERT_NE(it, loader->end()) << "epoch " << epoch;
    ASSERT_NE(++it, loader->end()) << "epoch " << epoch;
    ASSERT_EQ(++it, loader->end()) << "epoch " << epoch;
  }
}

TEST(loader_iterator_test, TheLastBatchIsShortOrDropped) {
  auto sizes = [](bool drop_last) {
    auto loader = gt::make_data_loader(count_dataset{}, DataLoaderOptions(33).drop_last(drop_last));
    std::vector<std::size_t> out;
    for (auto& batch : *loader) out.push_back(batch.size());
    return out;
  };
  EXPECT_EQ(sizes(false), (std::vector<std::size_t>{33, 33, 33, 1}));
  EXPECT_EQ(sizes(true), (std::vector<std::size_t>{33, 33, 33}));
}

}  // namespace
