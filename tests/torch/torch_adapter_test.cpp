// gpufeed::torch: tensors over batches, the make_data_loader drop-in against libtorch's own
// loader, leases held by tensors, the errors a libtorch dataset can cause, and what making a
// loader asks of a dataset (no read on the calling thread; reads that wait for each other).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpufeed/torch.hpp"
#include "gpufeed/torch/current_stream.hpp"
#include "support/test_datasets.hpp"
#include "torch/torch_test_datasets.hpp"

namespace {

namespace gt = gpufeed::torch;
using torch::data::DataLoaderOptions;
using torch::data::samplers::SequentialSampler;
using torch::data::transforms::Stack;
using torch_test::indices_in;
using torch_test::rows_dataset;

// Examples without a target.
class unlabelled_dataset
    : public torch::data::datasets::Dataset<unlabelled_dataset, torch::data::TensorExample> {
 public:
  torch::data::TensorExample get(std::size_t index) override {
    return torch::data::TensorExample{torch::full({2}, static_cast<double>(index))};
  }
  torch::optional<std::size_t> size() const override { return 10; }
};

// get() returns views with other strides than their shape's row-major ones: a permuted image
// ([3, 4, 5] over a [5, 3, 4] row) and a transposed label.
class strided_dataset : public torch::data::datasets::Dataset<strided_dataset> {
 public:
  explicit strided_dataset(std::int64_t n) {
    torch::manual_seed(3);
    rows_ = torch::rand({n, 5, 3, 4});
    labels_ = torch::randint(0, 10, {n, 3, 2}, torch::kInt64);
  }
  torch::data::Example<> get(std::size_t index) override {
    auto const i = static_cast<std::int64_t>(index);
    return {rows_[i].permute({1, 2, 0}), labels_[i].t()};
  }
  torch::optional<std::size_t> size() const override {
    return static_cast<std::size_t>(rows_.size(0));
  }

 private:
  torch::Tensor rows_;
  torch::Tensor labels_;
};

// Counts get() calls in flight on each object (a copy starts at none): more than one at a time
// on one object is an overlap. Copies share the tallies.
class exclusive_dataset : public torch::data::datasets::Dataset<exclusive_dataset> {
 public:
  struct tallies {
    std::atomic<int> overlaps{0};
    std::atomic<int> copies{0};
  };
  explicit exclusive_dataset(std::size_t n) : n_{n}, tallies_{std::make_shared<tallies>()} {}
  exclusive_dataset(exclusive_dataset const& other)
      : torch::data::datasets::Dataset<exclusive_dataset>{other},
        n_{other.n_},
        tallies_{other.tallies_} {
    tallies_->copies.fetch_add(1);
  }
  exclusive_dataset& operator=(exclusive_dataset const&) = delete;
  ~exclusive_dataset() override = default;

  torch::data::Example<> get(std::size_t index) override {
    if (in_flight_.fetch_add(1) != 0) tallies_->overlaps.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::microseconds{300});  // widens any overlap
    torch::data::Example<> out{torch::full({4}, static_cast<double>(index)),
                               torch::full({}, static_cast<std::int64_t>(index), torch::kInt64)};
    in_flight_.fetch_sub(1);
    return out;
  }
  torch::optional<std::size_t> size() const override { return n_; }
  [[nodiscard]] std::shared_ptr<tallies> shared() const { return tallies_; }

 private:
  std::size_t n_;
  std::shared_ptr<tallies> tallies_;
  std::atomic<int> in_flight_{0};
};

// A batch transform that is not Stack: gpufeed reads such a dataset through get_batch.
struct negate_batch : torch::data::transforms::BatchTransform<std::vector<torch::data::Example<>>,
                                                              std::vector<torch::data::Example<>>> {
  std::vector<torch::data::Example<>> apply_batch(
      std::vector<torch::data::Example<>> batch) override {
    for (auto& e : batch) e.data = -e.data;
    return batch;
  }
};

// libtorch's own batches of `dataset` (which ends in .map(Stack<>())), in order.
template <class Dataset>
std::vector<torch::data::Example<>> libtorch_batches_of(Dataset dataset, std::size_t batch,
                                                        std::size_t workers) {
  auto const size = *dataset.size();
  return torch_test::libtorch_batches(
      std::move(dataset), SequentialSampler{size},
      DataLoaderOptions().batch_size(batch).workers(workers).enforce_ordering(true));
}

std::vector<torch::data::Example<>> libtorch_row_batches(rows_dataset const& data,
                                                         std::size_t batch, std::size_t workers) {
  return libtorch_batches_of(rows_dataset{data}.map(Stack<>()), batch, workers);
}

// gpufeed's batches of the same `dataset` equal libtorch's, batch for batch.
template <class Dataset>
void expect_libtorchs_batches(Dataset const& dataset, std::size_t batch) {
  auto const want = libtorch_batches_of(Dataset{dataset}, batch, 2);
  auto loader = gt::make_data_loader<SequentialSampler>(
      Dataset{dataset}, DataLoaderOptions().batch_size(batch).workers(2));
  std::size_t b = 0;
  for (auto& got : *loader) {
    ASSERT_LT(b, want.size());
    EXPECT_TRUE(torch::equal(got.data, want[b].data)) << "batch " << b;
    EXPECT_TRUE(torch::equal(got.target, want[b].target)) << "batch " << b;
    ++b;
  }
  EXPECT_EQ(b, want.size());
}

TEST(torch_adapter_test, WrappedDatasetGivesLibtorchsBatchesInLibtorchsOrder) {
  rows_dataset const data{37};
  auto const want = libtorch_row_batches(data, 8, 2);
  auto loader = gt::make_data_loader<SequentialSampler>(
      rows_dataset{data}.map(Stack<>()),
      DataLoaderOptions().batch_size(8).workers(2).enforce_ordering(true));
  std::size_t b = 0;
  for (auto& got : *loader) {
    ASSERT_LT(b, want.size());
    EXPECT_TRUE(torch::equal(got.data, want[b].data)) << "batch " << b;
    EXPECT_TRUE(torch::equal(got.target, want[b].target)) << "batch " << b;
    EXPECT_EQ(got.data.dtype(), torch::kFloat);
    EXPECT_EQ(got.data.sizes(), want[b].data.sizes());
    ++b;
  }
  EXPECT_EQ(b, want.size());
}

TEST(torch_adapter_test, TensorsEqualTheDatasetRowsTheirIndicesName) {
  rows_dataset const data{50};
  auto loader = gt::make_data_loader(rows_dataset{data}.map(Stack<>()),
                                     gt::data_loader_options{6}.workers(3).seed(11));
  std::set<std::int64_t> seen;
  for (auto& b : *loader) {
    ASSERT_EQ(b.size(), b.data.size(0));
    for (std::int64_t r = 0; r < b.size(); ++r) {
      auto const i = b.indices[static_cast<std::size_t>(r)];
      EXPECT_TRUE(torch::equal(b.data[r], data.images()[i])) << "index " << i;
      EXPECT_TRUE(torch::equal(b["target"][r], data.labels()[i])) << "index " << i;
      seen.insert(i);
    }
    EXPECT_EQ(b.names, (std::vector<std::string>{"data", "target"}));
  }
  EXPECT_EQ(seen.size(), 50U);  // every sample once: RandomSampler's epoch is a permutation
}

TEST(torch_adapter_test, RandomSamplerShufflesWithTheSeedAndSequentialDoesNot) {
  rows_dataset const data{40};
  auto order = [&](auto make) {
    auto loader = make();
    std::vector<std::int64_t> out;
    for (auto& b : *loader) out.insert(out.end(), b.indices.begin(), b.indices.end());
    return out;
  };
  auto const shuffled = order([&] {
    return gt::make_data_loader(rows_dataset{data}.map(Stack<>()),
                                gt::data_loader_options{5}.seed(3));
  });
  auto const again = order([&] {
    return gt::make_data_loader(rows_dataset{data}.map(Stack<>()),
                                gt::data_loader_options{5}.seed(3));
  });
  auto const sequential = order([&] {
    return gt::make_data_loader<SequentialSampler>(rows_dataset{data}.map(Stack<>()),
                                                   std::size_t{5});
  });
  std::vector<std::int64_t> in_order(40);
  for (std::int64_t i = 0; i < 40; ++i) in_order[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(sequential, in_order);
  EXPECT_EQ(shuffled, again);
  EXPECT_NE(shuffled, in_order);
}

TEST(torch_adapter_test, ExampleTransformsAreApplied) {
  rows_dataset const data{12};
  auto loader = gt::make_data_loader<SequentialSampler>(
      rows_dataset{data}.map(torch::data::transforms::Normalize<>(0.5, 0.25)).map(Stack<>()),
      std::size_t{4});
  for (auto& b : *loader) {
    auto const first = b.indices.front();
    EXPECT_TRUE(torch::allclose(b.data[0], (data.images()[first] - 0.5) / 0.25));
  }
}

TEST(torch_adapter_test, ChainedExampleTransformsMatchLibtorch) {
  rows_dataset const data{13};
  using example = torch::data::Example<>;
  auto const chained =
      rows_dataset{data}
          .map(torch::data::transforms::Normalize<>(0.5, 0.25))
          .map(torch::data::transforms::Lambda<example>([](example e) {
            return example{e.data * 2 + 1, e.target + 3};  // after Normalize, not before
          }))
          .map(Stack<>());
  expect_libtorchs_batches(chained, 4);
}

TEST(torch_adapter_test, ABatchTransformOtherThanStackIsApplied) {
  rows_dataset const data{11};
  auto const negated = rows_dataset{data}.map(negate_batch{}).map(Stack<>());
  expect_libtorchs_batches(negated, 4);
}

TEST(torch_adapter_test, NonContiguousExamplesAreCopiedByTheirValues) {
  strided_dataset data{10};
  auto const first = data.get(0);
  ASSERT_FALSE(first.data.is_contiguous());
  ASSERT_FALSE(first.target.is_contiguous());
  auto loader =
      gt::make_data_loader<SequentialSampler>(strided_dataset{data}.map(Stack<>()), std::size_t{4});
  std::int64_t seen = 0;
  for (auto& b : *loader) {
    EXPECT_EQ(b.data.sizes().vec(), (std::vector<std::int64_t>{b.size(), 3, 4, 5}));
    for (std::int64_t r = 0; r < b.size(); ++r) {
      auto const i = b.indices[static_cast<std::size_t>(r)];
      auto const want = data.get(static_cast<std::size_t>(i));
      EXPECT_TRUE(torch::equal(b.data[r], want.data)) << "index " << i;
      EXPECT_TRUE(torch::equal(b.target[r], want.target)) << "index " << i;
      ++seen;
    }
  }
  EXPECT_EQ(seen, 10);
}

TEST(torch_adapter_test, AutomaticWorkersEachReadThroughTheirOwnCopy) {
  exclusive_dataset data{96};
  auto const tallies = data.shared();
  auto options = gt::data_loader_options{4}.seed(5);
  options.loader().workers = gpufeed::auto_workers;
  options.loader().prefetch_depth = gpufeed::auto_depth;
  options.loader().autotune.max_workers = 8;  // more threads than this machine's cores
  auto loader = gt::make_data_loader(std::move(data).map(Stack<>()), options);
  std::set<std::int64_t> seen;
  for (auto& b : *loader) {
    for (std::int64_t r = 0; r < b.size(); ++r) {
      auto const i = b.indices[static_cast<std::size_t>(r)];
      EXPECT_EQ(b.target[r].item<std::int64_t>(), i);
      EXPECT_TRUE(torch::equal(b.data[r], torch::full({4}, static_cast<double>(i))));
      seen.insert(i);
    }
  }
  EXPECT_EQ(seen.size(), 96U);
  EXPECT_EQ(tallies->overlaps.load(), 0) << "get() ran concurrently on one object";
  // A few copies on the way in (the class has no move constructor), then at most one per
  // worker thread: none for the workers that never started.
  EXPECT_LE(tallies->copies.load(), 8 + 4);
}

TEST(torch_adapter_test, WorkersTakesGpufeedsAutomaticCount) {
  EXPECT_EQ(gt::data_loader_options{}.workers(gpufeed::auto_workers).workers(),
            gpufeed::auto_workers);
  EXPECT_EQ(gt::data_loader_options{}.workers(std::size_t{1} << 40).workers(),
            gpufeed::auto_workers);  // saturates
  EXPECT_EQ(gt::data_loader_options{}.workers(3).workers(), 3U);
}

TEST(torch_adapter_test, ExamplesWithoutATargetHaveData) {
  auto loader = gt::make_data_loader<SequentialSampler>(
      unlabelled_dataset{}.map(Stack<torch::data::TensorExample>()), std::size_t{4});
  auto b = loader->next();
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(b->target.defined());
  EXPECT_EQ(b->names, std::vector<std::string>{"data"});
  EXPECT_TRUE(
      torch::equal(b->data.select(1, 0), torch::tensor({0.0F, 1.0F, 2.0F, 3.0F}, torch::kFloat)));
}

TEST(torch_adapter_test, LibtorchOptionsMeanWhatTheySay) {
  gt::data_loader_options const from_torch{
      DataLoaderOptions().batch_size(16).workers(0).drop_last(true).timeout(
          std::chrono::milliseconds{1500})};
  EXPECT_EQ(from_torch.batch_size(), 16U);
  EXPECT_EQ(from_torch.workers(), 1U);  // 0 (load in the caller) becomes one worker
  EXPECT_TRUE(from_torch.drop_last());
  EXPECT_EQ(from_torch.timeout(), std::chrono::milliseconds{1500});
  rows_dataset const data{37};
  auto loader =
      gt::make_data_loader<SequentialSampler>(rows_dataset{data}.map(Stack<>()), from_torch);
  std::size_t batches = 0;
  for (auto& b : *loader) {
    EXPECT_EQ(b.size(), 16);
    ++batches;
  }
  EXPECT_EQ(batches, 2U);  // 37 = 16 + 16 + 5 dropped
}

TEST(torch_adapter_test, BeginAfterABrokenEpochStartsTheNextOne) {
  rows_dataset const data{20};
  auto loader =
      gt::make_data_loader<SequentialSampler>(rows_dataset{data}.map(Stack<>()), std::size_t{5});
  for (auto& b : *loader) {
    EXPECT_EQ(b.epoch, 0U);
    break;
  }
  std::size_t batches = 0;
  for (auto& b : *loader) {
    EXPECT_EQ(b.epoch, 1U);
    EXPECT_EQ(b.sequence, batches);
    ++batches;
  }
  EXPECT_EQ(batches, 4U);
}

TEST(torch_adapter_test, GpufeedDatasetsLoadThroughTheSameInterface) {
  auto data = std::make_shared<gpufeed::test::echo_dataset>(30);
  auto loader = gt::make_data_loader<SequentialSampler>(
      std::shared_ptr<gpufeed::dataset const>{data}, gt::data_loader_options{7});
  std::int64_t next_index = 0;
  for (auto& b : *loader) {
    ASSERT_EQ(b.data.dtype(), torch::kInt64);
    for (std::int64_t r = 0; r < b.size(); ++r) {
      EXPECT_EQ(b.data[r].item<std::int64_t>(), next_index++);
    }
  }
  EXPECT_EQ(next_index, 30);
}

TEST(torch_adapter_test, CudaPlacementWithoutCudaSaysWhatToDo) {
  if (gt::detail::torch_has_cuda()) GTEST_SKIP() << "this build has CUDA batches";
  rows_dataset const data{8};
  try {
    (void)gt::make_data_loader(rows_dataset{data}.map(Stack<>()),
                               gt::data_loader_options{4}.device(0));
    FAIL() << "device() was accepted without CUDA";
  } catch (gpufeed::logic_error const& e) {
    EXPECT_NE(std::string{e.what()}.find(".to(device)"), std::string::npos) << e.what();
  }
}

TEST(torch_adapter_test, DtypesMapBothWays) {
  for (auto type : {gpufeed::dtype::u8, gpufeed::dtype::i8, gpufeed::dtype::i16,
                    gpufeed::dtype::i32, gpufeed::dtype::i64, gpufeed::dtype::f16,
                    gpufeed::dtype::bf16, gpufeed::dtype::f32, gpufeed::dtype::f64}) {
    EXPECT_EQ(gt::from_torch_dtype(gt::to_torch_dtype(type)), type);
  }
  EXPECT_EQ(gt::from_torch_dtype(torch::kBool), gpufeed::dtype::boolean);
  EXPECT_EQ(gt::to_torch_dtype(gpufeed::dtype::boolean), torch::kBool);
  EXPECT_THROW((void)gt::from_torch_dtype(torch::kComplexFloat), gpufeed::logic_error);
}

}  // namespace
