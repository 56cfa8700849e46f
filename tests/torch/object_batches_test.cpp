// The slow path: libtorch datasets whose examples are not tensors (ints, structs, tensors with
// string targets) or whose batch transforms are not a final Stack<> yield what libtorch's loader
// yields for them, batch for batch, say so in the log, keep nothing of abandoned batches, and
// report a failing get() as any read's sample_error.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpufeed/torch.hpp"
#include "support/text_log_capture.hpp"
#include "torch/torch_test_datasets.hpp"

namespace {

namespace gt = gpufeed::torch;
using torch::data::DataLoaderOptions;
using torch::data::Example;
using torch::data::samplers::SequentialSampler;
using torch::data::transforms::Stack;

// Example i is the int i + 1; get() throws for `bad`.
class count_dataset : public torch::data::datasets::Dataset<count_dataset, int> {
 public:
  explicit count_dataset(std::size_t n, std::size_t bad = ~std::size_t{0}) : n_{n}, bad_{bad} {}
  int get(std::size_t index) override {
    if (index == bad_) throw std::out_of_range{"no example " + std::to_string(index)};
    return static_cast<int>(index) + 1;
  }
  torch::optional<std::size_t> size() const override { return n_; }

 private:
  std::size_t n_;
  std::size_t bad_;
};

// A program's own example type.
struct word {
  std::string text;
  std::int64_t length = 0;
  bool operator==(word const&) const = default;
};
class word_dataset : public torch::data::datasets::Dataset<word_dataset, word> {
 public:
  word get(std::size_t index) override {
    std::string text(index % 5 + 1, static_cast<char>('a' + index % 26));
    return {text, static_cast<std::int64_t>(text.size())};
  }
  torch::optional<std::size_t> size() const override { return 23; }
};

// A tensor with a string target (not a tensor example).
class labelled_dataset
    : public torch::data::datasets::Dataset<labelled_dataset, Example<torch::Tensor, std::string>> {
 public:
  Example<torch::Tensor, std::string> get(std::size_t index) override {
    return {torch::full({2}, static_cast<double>(index)), "label " + std::to_string(index)};
  }
  torch::optional<std::size_t> size() const override { return 9; }
};

// A batch transform that needs the whole batch: each example minus the batch's mean. Applied
// to one example at a time it would give zeros.
struct centre_batch
    : torch::data::transforms::BatchTransform<std::vector<Example<>>, std::vector<Example<>>> {
  std::vector<Example<>> apply_batch(std::vector<Example<>> batch) override {
    auto sum = torch::zeros_like(batch.front().data);
    for (auto const& e : batch) sum += e.data;
    auto const mean = sum / static_cast<double>(batch.size());
    for (auto& e : batch) e.data = e.data - mean;
    return batch;
  }
};

// libtorch's own batches of `dataset`, one epoch in order.
template <class Dataset>
auto libtorch_batches(Dataset dataset, std::size_t batch_size) {
  auto const size = *dataset.size();
  auto loader = torch::data::make_data_loader(std::move(dataset), SequentialSampler{size},
                                              DataLoaderOptions(batch_size).workers(2));
  std::vector<typename Dataset::BatchType> out;
  for (auto& b : *loader) out.push_back(b);
  return out;
}

// gpufeed's batches of `dataset`, one epoch in order.
template <class Dataset>
auto gpufeed_batches(Dataset dataset, std::size_t batch_size) {
  auto const size = *dataset.size();
  auto loader = gt::make_data_loader(std::move(dataset), SequentialSampler{size},
                                     DataLoaderOptions(batch_size).workers(3));
  std::vector<typename Dataset::BatchType> out;
  for (auto& b : *loader) out.push_back(b);
  return out;
}

TEST(object_batches_test, IntExamplesComeAsLibtorchsVectorsOfInts) {
  auto loader = gt::make_data_loader<SequentialSampler>(count_dataset{10}, 4);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(*loader->begin())>, std::vector<int>>);
  EXPECT_EQ(gpufeed_batches(count_dataset{10}, 4), libtorch_batches(count_dataset{10}, 4));
  std::vector<std::vector<int>> got;
  for (auto& b : *loader) got.push_back(b);
  EXPECT_EQ(got, (std::vector<std::vector<int>>{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10}}));
}

TEST(object_batches_test, ExamplesOfTheProgramsOwnTypeComeAsLibtorchsBatches) {
  EXPECT_EQ(gpufeed_batches(word_dataset{}, 5), libtorch_batches(word_dataset{}, 5));
}

TEST(object_batches_test, ATensorWithAStringTargetKeepsBoth) {
  auto const want = libtorch_batches(labelled_dataset{}, 4);
  auto const got = gpufeed_batches(labelled_dataset{}, 4);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t b = 0; b < got.size(); ++b) {
    ASSERT_EQ(got[b].size(), want[b].size());
    for (std::size_t e = 0; e < got[b].size(); ++e) {
      EXPECT_TRUE(torch::equal(got[b][e].data, want[b][e].data));
      EXPECT_EQ(got[b][e].target, want[b][e].target);
    }
  }
}

TEST(object_batches_test, ExampleAndBatchTransformsAreLibtorchsOwn) {
  using torch::data::transforms::Collate;
  using torch::data::transforms::Lambda;
  auto const mapped = [] {
    return count_dataset{17}
        .map(Lambda<int>([](int x) { return x * 10; }))
        .map(Collate<int>(
            [](std::vector<int> batch) { return std::accumulate(batch.begin(), batch.end(), 0); }));
  };
  auto const got = gpufeed_batches(mapped(), 5);
  static_assert(std::is_same_v<decltype(got)::value_type, int>);
  EXPECT_EQ(got, libtorch_batches(mapped(), 5));
  EXPECT_EQ(got, (std::vector<int>{150, 400, 650, 330}));
}

TEST(object_batches_test, ABatchTransformOfTensorExamplesSeesTheWholeBatch) {
  auto const centred = [] { return torch_test::index_dataset{10}.map(centre_batch{}); };
  auto const want = libtorch_batches(centred().map(Stack<>()), 4);
  auto const got = gpufeed_batches(centred().map(Stack<>()), 4);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t b = 0; b < got.size(); ++b) {
    EXPECT_TRUE(torch::equal(got[b].data, want[b].data)) << "batch " << b;
    EXPECT_TRUE(torch::equal(got[b].target, want[b].target)) << "batch " << b;
  }
  EXPECT_FALSE(torch::equal(got.front().data, torch::zeros_like(got.front().data)));
}

TEST(object_batches_test, ASharedDatasetIsReadThroughTheOneObject) {
  struct uncopyable : torch::data::datasets::Dataset<uncopyable, int> {
    uncopyable() = default;
    uncopyable(uncopyable const&) = delete;
    uncopyable& operator=(uncopyable const&) = delete;
    int get(std::size_t index) override { return static_cast<int>(index) * 2; }
    torch::optional<std::size_t> size() const override { return 30; }
  };
  auto loader = gt::make_data_loader<SequentialSampler>(
      torch::data::datasets::make_shared_dataset<uncopyable>(), DataLoaderOptions(7).workers(3));
  int next = 0;
  for (auto& batch : *loader) {
    for (int value : batch) EXPECT_EQ(value, 2 * next++);
  }
  EXPECT_EQ(next, 30);
}

TEST(object_batches_test, TheLogSaysItIsTheSlowPathAndTensorsAreNot) {
  gpufeed::test::text_log_capture log{"info"};
  { auto slow = gt::make_data_loader(count_dataset{4}, 2); }
  EXPECT_EQ(log.count("the slow path"), 1U);
  EXPECT_EQ(log.count("examples of type int,"), 1U);
  { auto fast = gt::make_data_loader(torch_test::index_dataset{4}.map(Stack<>()), 2); }
  EXPECT_EQ(log.count("the slow path"), 1U);
}

TEST(object_batches_test, AFailingGetIsAWorkerExceptionNamingItsIndex) {
  auto loader = gt::make_data_loader<SequentialSampler>(count_dataset{12, 6}, 4);
  auto it = loader->begin();
  EXPECT_EQ(*it, (std::vector<int>{1, 2, 3, 4}));
  try {
    ++it;
    FAIL() << "batch 1 holds example 6, whose get() throws";
  } catch (gt::worker_exception const& e) {
    EXPECT_EQ(e.index(), 6U);
    EXPECT_THROW(std::rethrow_exception(e.original_exception), std::out_of_range);
  }
  EXPECT_EQ(*it, (std::vector<int>{9, 10, 11, 12}));  // the loader goes on with batch 2
}

TEST(object_batches_test, DevicePlacementIsRefusedWithWhatToDo) {
  try {
    (void)gt::make_data_loader(count_dataset{4}, gt::data_loader_options{2}.device(0));
    FAIL() << "device() was accepted for batches of ints";
  } catch (gpufeed::logic_error const& e) {
    EXPECT_NE(std::string{e.what()}.find(".to(device)"), std::string::npos) << e.what();
    EXPECT_NE(std::string{e.what()}.find("int"), std::string::npos) << e.what();
  }
}

TEST(object_batches_test, AbandonedBatchesLeaveNoExamplesBehind) {
  auto source = std::make_shared<gt::object_adapter<count_dataset> const>(count_dataset{400});
  gt::object_data_loader<std::vector<int>> loader{
      gt::data_loader{source, gt::data_loader_options{8}.workers(2).prefetch_depth(3).seed(1)},
      source};
  for (std::uint64_t epoch = 0; epoch < 20; ++epoch) {
    loader.set_epoch(epoch);  // discards whatever was prepared of the last one
    auto batch = loader.next();
    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ(batch->size(), 8U);
  }
  // At most the ring's samples (3 slots of 8, and a slot the ring may add) wait for collection.
  EXPECT_LE(source->kept(), 4U * 8U);
}

}  // namespace
