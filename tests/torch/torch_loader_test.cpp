// gpufeed::torch's loader where libtorch programs rely on libtorch's: what unstacked datasets
// yield, options() and join(), held batches (a running total of losses), bool tensors, the
// notes on libtorch's options, the streams a CUDA batch may be used on, and the slot a batch's
// tensors lease until the last view of them goes.

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpufeed/log.hpp"
#include "gpufeed/torch.hpp"
#include "gpufeed/torch/current_stream.hpp"
#include "support/text_log_capture.hpp"
#include "torch/torch_test_datasets.hpp"

#if GPUFEED_TORCH_WITH_CUDA
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace {

namespace gt = gpufeed::torch;
using torch::data::DataLoaderOptions;
using torch::data::Example;
using torch::data::samplers::SequentialSampler;
using torch::data::transforms::Stack;
using torch_test::index_dataset;
using torch_test::indices_in;
using torch_test::rows_dataset;

TEST(torch_loader_test, AnUnstackedDatasetYieldsLibtorchsVectorOfExamples) {
  auto loader =
      gt::make_data_loader<SequentialSampler>(index_dataset{10}, DataLoaderOptions(4).workers(2));
  using batch_type = std::remove_cvref_t<decltype(*loader->begin())>;
  static_assert(std::is_same_v<batch_type, std::vector<Example<>>>);
  auto libtorch =
      torch::data::make_data_loader<SequentialSampler>(index_dataset{10}, DataLoaderOptions(4));
  std::vector<std::vector<Example<>>> want;
  for (auto& b : *libtorch) want.push_back(b);
  std::size_t b = 0;
  for (std::vector<Example<>>& got : *loader) {
    ASSERT_LT(b, want.size());
    ASSERT_EQ(got.size(), want[b].size()) << "batch " << b;
    for (std::size_t e = 0; e < got.size(); ++e) {
      EXPECT_TRUE(torch::equal(got[e].data, want[b][e].data)) << "batch " << b << " example " << e;
      EXPECT_TRUE(torch::equal(got[e].target, want[b][e].target)) << "batch " << b;
    }
    ++b;
  }
  EXPECT_EQ(b, 3U);
}

TEST(torch_loader_test, UnstackedExamplesKeepTheirSlotLikeStackedOnes) {
  auto options = gt::data_loader_options{4}.prefetch_depth(2).held_batches_budget(0);
  options.loader().timeout = std::chrono::milliseconds{20'000};  // only a guard against a hang
  auto loader = gt::make_data_loader<SequentialSampler>(index_dataset{20}, options);
  auto first = loader->next();
  auto second = loader->next();
  ASSERT_TRUE(first && second);
  auto const kept = (*first)[3].data;  // one example's tensor keeps the whole slot
  first.reset();
  EXPECT_THROW((void)loader->next(), gpufeed::logic_error);
  EXPECT_TRUE(torch::equal(kept, torch::tensor({3.0F, 3.5F})));
}

TEST(torch_loader_test, TensorExamplesWithoutTargetsUnstackToo) {
  auto loader = gt::make_data_loader<SequentialSampler>(
      torch::data::datasets::TensorDataset(torch::arange(6, torch::kInt32).view({3, 2})), 2);
  auto b = loader->next();
  ASSERT_TRUE(b.has_value());
  static_assert(std::is_same_v<decltype(b)::value_type, std::vector<torch::data::TensorExample>>);
  ASSERT_EQ(b->size(), 2U);
  EXPECT_TRUE(torch::equal((*b)[1].data, torch::tensor({2, 3}, torch::kInt32)));
}

TEST(torch_loader_test, TheStackedBatchIsALibtorchExample) {
  auto loader = gt::make_data_loader<SequentialSampler>(index_dataset{6}.map(Stack<>()), 3);
  std::int64_t next = 0;
  for (Example<>& batch : *loader) {  // as libtorch's programs bind it
    for (auto i : indices_in(batch.data)) EXPECT_EQ(i, next++);
  }
  EXPECT_EQ(next, 6);
}

TEST(torch_loader_test, NoOptionsMeansBatchesOfOne) {
  auto loader = gt::make_data_loader(index_dataset{5}.map(Stack<>()));
  EXPECT_EQ(loader->options().batch_size, 1U);
  std::size_t batches = 0;
  for (auto& b : *loader) {
    EXPECT_EQ(b.data.size(0), 1);
    ++batches;
  }
  EXPECT_EQ(batches, 5U);
}

TEST(torch_loader_test, OptionsSayWhatIsInForceInLibtorchsTerms) {
  auto loader =
      gt::make_data_loader(index_dataset{10}.map(Stack<>()),
                           DataLoaderOptions(3).workers(2).max_jobs(5).drop_last(true).timeout(
                               std::chrono::milliseconds{4000}));
  auto const& o = loader->options();
  EXPECT_EQ(o.batch_size, 3U);
  EXPECT_EQ(o.workers, 2U);
  EXPECT_EQ(o.max_jobs, 5U);  // libtorch's max_jobs is the prefetch depth
  EXPECT_EQ(loader->loader().options().prefetch_depth, 5U);
  EXPECT_TRUE(o.drop_last);
  EXPECT_TRUE(o.enforce_ordering);
  ASSERT_TRUE(o.timeout.has_value());
  EXPECT_EQ(o.timeout->count(), 4000);
}

TEST(torch_loader_test, LibtorchOptionsGpufeedTreatsDifferentlyAreSaidOnceInTheLog) {
  gpufeed::test::text_log_capture log{"info"};
  auto options = gt::data_loader_options{DataLoaderOptions(2).workers(0).enforce_ordering(false)};
  options.enforce_ordering(false);  // said once, however often it is set
  auto loader = gt::make_data_loader(index_dataset{4}.map(Stack<>()), options);
  EXPECT_EQ(log.count("workers(0)"), 1U);
  EXPECT_EQ(log.count("enforce_ordering(false) changes nothing"), 1U);
  EXPECT_EQ(log.count("shuffle seed"), 1U);  // and where the default shuffle's seed comes from
}

// Units that include torch log through log_message (spdlog's headers do not compile beside a pip
// torch's fmt): the text goes out verbatim, braces included, and only at an enabled level.
TEST(torch_loader_test, TorchUnitsLogVerbatimThroughLogMessage) {
  gpufeed::test::text_log_capture log{"info"};
  EXPECT_TRUE(gpufeed::log_enabled(gpufeed::log_level::info));
  EXPECT_FALSE(gpufeed::log_enabled(gpufeed::log_level::debug));
  gpufeed::log_message(gpufeed::log_level::debug, "below the level");
  gpufeed::log_message(gpufeed::log_level::warn, "braces {} and {0} stay");
  gpufeed::log_message(gpufeed::log_level::error, "an error");
  EXPECT_EQ(log.count("below the level"), 0U);
  EXPECT_EQ(log.count("braces {} and {0} stay"), 1U);
  EXPECT_EQ(log.count("an error"), 1U);
}

TEST(torch_loader_test, JoinStopsTheWorkersAndLaterCallsSaySo) {
  auto loader = gt::make_data_loader<SequentialSampler>(index_dataset{12}.map(Stack<>()),
                                                        DataLoaderOptions(4).workers(2));
  auto kept = loader->next();
  ASSERT_TRUE(kept.has_value());
  loader->join();
  loader->join();  // idempotent, as libtorch's
  EXPECT_EQ(loader->options().batch_size, 4U);
  try {
    (void)loader->next();
    FAIL() << "next() after join() was accepted";
  } catch (gpufeed::logic_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("joined"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)loader->begin(), gpufeed::logic_error);
  EXPECT_EQ(indices_in(kept->data), (std::vector<std::int64_t>{0, 1, 2, 3}));  // still valid
}

TEST(torch_loader_test, ARunningTotalOfLossesKeepsEveryBatchAndTheRingGrows) {
  // total_loss += loss keeps each step's graph, and with it the batch's input tensors: with
  // prefetch_depth 2, libtorch's loader would only use more memory; gpufeed's ring grows.
  gpufeed::test::text_log_capture log;
  torch::manual_seed(3);
  torch::nn::Linear model(2, 1);
  auto loader = gt::make_data_loader<SequentialSampler>(
      index_dataset{40}.map(Stack<>()), gt::data_loader_options{4}.workers(2).prefetch_depth(2));
  torch::Tensor total_loss = torch::zeros({});
  std::size_t batches = 0;
  for (auto& batch : *loader) {
    auto loss = model->forward(batch.data).pow(2).mean();
    total_loss += loss;
    ++batches;
  }
  EXPECT_EQ(batches, 10U);
  total_loss.backward();
  // The same sum from the dataset's rows directly.
  model->zero_grad();
  torch::Tensor want = torch::zeros({});
  for (std::int64_t b = 0; b < 10; ++b) {
    auto const first = static_cast<float>(4 * b);
    auto const rows = torch::arange(first, first + 4).unsqueeze(1);
    want += model->forward(torch::cat({rows, rows + 0.5}, 1)).pow(2).mean();
  }
  EXPECT_TRUE(torch::allclose(total_loss, want))
      << total_loss.item<double>() << " vs " << want.item<double>();
  auto const counts = loader->loader().snapshot();
  EXPECT_GE(counts.ring_grown, 8U);  // every batch was held: 10 slots for 10 batches
  EXPECT_EQ(log.count("the training loop keeps"), 1U) << "the growth is warned about once";
}

TEST(torch_loader_test, HeldBatchesPastTheBudgetSayWhatToChange) {
  auto loader = gt::make_data_loader<SequentialSampler>(
      index_dataset{40}.map(Stack<>()),
      gt::data_loader_options{4}.prefetch_depth(2).held_batches_budget(0));
  std::vector<gt::tensor_batch> held;
  held.push_back(*loader->next());
  held.push_back(*loader->next());
  try {
    (void)loader->next();
    FAIL() << "a third batch was delivered with both slots held and no room to grow";
  } catch (gpufeed::logic_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("held_batches_budget"), std::string::npos) << e.what();
  }
}

TEST(torch_loader_test, BoolTensorsStayBool) {
  auto loader = gt::make_data_loader<SequentialSampler>(index_dataset{6, true}.map(Stack<>()), 6);
  auto b = loader->next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->target.scalar_type(), torch::kBool);
  auto const i = torch::arange(6, torch::kInt64);
  auto const want = torch::stack({i.remainder(2).eq(0), i.remainder(3).eq(0)}, 1);
  EXPECT_TRUE(torch::equal(b->target, want));
}

TEST(torch_loader_test, UseOnAHostBatchNeedsNothing) {
  auto loader = gt::make_data_loader<SequentialSampler>(index_dataset{4}.map(Stack<>()), 2);
  auto b = loader->next();
  ASSERT_TRUE(b.has_value());
  EXPECT_NO_THROW(b->use_on(c10::Stream{c10::Stream::DEFAULT, c10::Device{c10::kCPU}}));
  EXPECT_NO_THROW(b->use_on_current_stream());
}

TEST(torch_loader_test, UseOnAfterEveryTensorIsGoneSaysSo) {
  auto loader = gt::make_data_loader<SequentialSampler>(index_dataset{4}.map(Stack<>()), 2);
  auto b = loader->next();
  ASSERT_TRUE(b.has_value());
  gt::tensor_batch shell = *b;  // the batch's description, without its tensors
  shell.data = shell.target = torch::Tensor{};
  shell.fields.clear();
  EXPECT_NO_THROW(shell.use_on_current_stream());  // `b`'s tensors still hold the slot
  b.reset();
  try {
    shell.use_on_current_stream();
    FAIL() << "use_on was accepted for a batch whose slot is back in the ring";
  } catch (gpufeed::logic_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("tensors are all gone"), std::string::npos) << e.what();
  }
}

#if GPUFEED_TORCH_WITH_CUDA
// Owed on a GPU (compiled only where libtorch has CUDA): a slot is refilled only after the work
// queued on every stream declared with use_on, not only the one current at next(). With
// `through_a_shell` the stream is declared through a copy of the batch whose tensors were
// dropped: the device is the lease's, not guessed from the tensors (it once was, and such a
// declaration was skipped as if the batch were on the host).
void expect_release_waits_for_the_declared_stream(bool through_a_shell) {
  auto loader = gt::make_data_loader<SequentialSampler>(
      index_dataset{64}.map(Stack<>()),
      gt::data_loader_options{8}.device(0).prefetch_depth(1).held_batches_budget(0));
  auto side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, 0);
  torch::Tensor seen;
  {
    auto b = loader->next();  // handed to the current (default) stream
    ASSERT_TRUE(b.has_value());
    c10::cuda::CUDAStreamGuard const guard{side};
    gt::tensor_batch shell = *b;
    shell.data = shell.target = torch::Tensor{};
    shell.fields.clear();
    (through_a_shell ? shell : *b).use_on(side);
    at::cuda::sleep(1LL << 31);  // a long spin on the side stream, then the read
    seen = b->data.clone();
  }  // released: the only slot's next copy must wait for the side stream's read
  auto next = loader->next();
  ASSERT_TRUE(next.has_value());
  side.synchronize();
  EXPECT_EQ(indices_in(seen.cpu()), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(torch_loader_test, ReleaseWaitsForEveryDeclaredStream) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: owed on a GPU machine";
  expect_release_waits_for_the_declared_stream(/*through_a_shell=*/false);
}

TEST(torch_loader_test, UseOnTakesTheDeviceFromTheBatchNotItsTensors) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: owed on a GPU machine";
  expect_release_waits_for_the_declared_stream(/*through_a_shell=*/true);
}

TEST(torch_loader_test, UseOnRefusesAStreamOfAnotherDevice) {
  if (torch::cuda::device_count() < 2) GTEST_SKIP() << "needs two CUDA devices";
  auto loader = gt::make_data_loader<SequentialSampler>(index_dataset{8}.map(Stack<>()),
                                                        gt::data_loader_options{4}.device(0));
  auto b = loader->next();
  ASSERT_TRUE(b.has_value());
  EXPECT_THROW(b->use_on(c10::cuda::getStreamFromPool(false, 1)), gpufeed::logic_error);
}
#endif

TEST(torch_loader_test, TheSlotIsLeasedUntilTheLastViewOfItsTensorsGoes) {
  rows_dataset const data{40};
  for (bool may_grow : {false, true}) {
    SCOPED_TRACE(may_grow ? "the ring may grow" : "the ring may not grow");
    auto options = gt::data_loader_options{4}.prefetch_depth(2);
    // Only a guard against a hang: the error below comes at once, not after a wait.
    options.loader().timeout = std::chrono::milliseconds{20'000};
    if (!may_grow) {
      options.loader().held_batches_budget = 0;
    }
    auto loader =
        gt::make_data_loader<SequentialSampler>(rows_dataset{data}.map(Stack<>()), options);
    auto first = loader->next();
    auto second = loader->next();
    ASSERT_TRUE(first && second);
    auto const view = first->data.slice(0, 1, 3);  // a view keeps the slot too
    auto const expected = view.clone();
    first.reset();
    // Both slots are still leased (one through `view`): a third batch needs a third slot. With
    // growth allowed (the default: held batches, design.md item 8) the ring adds one; without,
    // next() says so (docs/torch.md, "Leases") instead of waiting.
    if (may_grow) {
      auto third = loader->next();
      ASSERT_TRUE(third.has_value());
      EXPECT_EQ(third->indices.front(), 8);
    } else {
      try {
        (void)loader->next();
        ADD_FAILURE() << "a third batch was delivered while both slots were leased";
      } catch (gpufeed::logic_error const& e) {
        EXPECT_NE(std::string{e.what()}.find("all 2 ring slots are leased"), std::string::npos)
            << e.what();
      }
    }
    EXPECT_TRUE(torch::equal(view, expected));  // and the viewed rows were not overwritten
  }
}

TEST(torch_loader_test, ReleasingTheTensorsGivesTheSlotBack) {
  rows_dataset const data{40};
  auto options = gt::data_loader_options{4}.prefetch_depth(2);
  options.loader().timeout = std::chrono::milliseconds{20'000};
  auto loader = gt::make_data_loader<SequentialSampler>(rows_dataset{data}.map(Stack<>()), options);
  for (std::size_t b = 0; b < 10; ++b) {
    auto batch = loader->next();  // each batch's tensors die at the end of the iteration
    ASSERT_TRUE(batch.has_value()) << "batch " << b;
    EXPECT_EQ(batch->indices.front(), static_cast<std::int64_t>(4 * b));
  }
}

TEST(torch_loader_test, TensorsOutliveTheirLoaderSafely) {
  rows_dataset const data{16};
  torch::Tensor kept;
  std::int64_t first = -1;
  {
    auto loader =
        gt::make_data_loader<SequentialSampler>(rows_dataset{data}.map(Stack<>()), std::size_t{8});
    auto b = loader->next();
    ASSERT_TRUE(b.has_value());
    kept = b->data;
    first = b->indices.front();
  }  // the loader is gone; the slot stays valid while `kept` views it
  EXPECT_TRUE(torch::equal(kept[0], data.images()[first]));
}

}  // namespace
