// The batch-size finder (suggest-only) and the learning-rate scaling rules.

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <new>
#include <stdexcept>
#include <vector>

#include "gpufeed/torch.hpp"

namespace {

namespace gt = gpufeed::torch;

// A trial that runs out of memory above `limit` samples, the way each allocator reports it.
enum class oom_kind { bad_alloc, torch_oom, torch_text };
auto trial_with_limit(std::size_t limit, oom_kind kind, std::vector<std::size_t>* tried = nullptr) {
  return [=](std::size_t batch) {
    if (tried != nullptr) tried->push_back(batch);
    if (batch <= limit) return;
    switch (kind) {
      case oom_kind::bad_alloc:
        throw std::bad_alloc{};
      case oom_kind::torch_oom:
        TORCH_CHECK_WITH(OutOfMemoryError, false, "CUDA out of memory (test double)");
        break;
      case oom_kind::torch_text:
        TORCH_CHECK(false, "DefaultCPUAllocator: can't allocate memory: out of memory");
    }
  };
}

TEST(batch_size_test, FindsTheLargestFitWhateverTheAllocatorThrows) {
  for (auto kind : {oom_kind::bad_alloc, oom_kind::torch_oom, oom_kind::torch_text}) {
    auto const r = gt::find_batch_size(trial_with_limit(37, kind));
    EXPECT_EQ(r.largest_fit, 37U);
    EXPECT_FALSE(r.hit_max);
    EXPECT_EQ(r.suggested, 32U);  // 37 less 10% is 33.3, rounded down to a multiple of 8
    EXPECT_NE(r.message.find("unchanged"), std::string::npos) << r.message;
  }
}

TEST(batch_size_test, DoublesThenBisects) {
  std::vector<std::size_t> tried;
  auto const r = gt::find_batch_size(trial_with_limit(100, oom_kind::bad_alloc, &tried));
  EXPECT_EQ(r.largest_fit, 100U);
  // 1, 2, ..., 64 fit, 128 fails, then bisection between 64 and 128.
  std::vector<std::size_t> const doubling{1, 2, 4, 8, 16, 32, 64, 128};
  ASSERT_GE(tried.size(), doubling.size());
  EXPECT_EQ(std::vector<std::size_t>(tried.begin(), tried.begin() + 8), doubling);
  EXPECT_LE(tried.size(), doubling.size() + 7);  // log2(64) more trials at most
  ASSERT_EQ(r.trials.size(), tried.size());
  for (auto const& t : r.trials) EXPECT_EQ(t.fit, t.batch_size <= 100);
}

TEST(batch_size_test, StopsAtTheMaximumAndSaysSo) {
  auto const r = gt::find_batch_size(trial_with_limit(1'000'000, oom_kind::bad_alloc),
                                     {.start = 4, .max = 48});
  EXPECT_EQ(r.largest_fit, 48U);
  EXPECT_TRUE(r.hit_max);
  EXPECT_EQ(r.suggested, 40U);  // 43.2 rounded down to a multiple of 8
  EXPECT_NE(r.message.find("maximum"), std::string::npos) << r.message;
}

TEST(batch_size_test, NothingFitsIsReportedNotHidden) {
  auto const r = gt::find_batch_size(trial_with_limit(0, oom_kind::bad_alloc));
  EXPECT_EQ(r.largest_fit, 0U);
  EXPECT_EQ(r.suggested, 0U);
  EXPECT_NE(r.message.find("ran out of memory"), std::string::npos) << r.message;
}

TEST(batch_size_test, OtherErrorsPropagate) {
  EXPECT_THROW((void)gt::find_batch_size([](std::size_t b) {
                 if (b > 3) throw std::invalid_argument{"shape mismatch in the model"};
               }),
               std::invalid_argument);
}

TEST(batch_size_test, RealModelForwardAndBackwardUpToTheMaximum) {
  torch::nn::Linear model{8, 2};
  auto const r = gt::find_batch_size(model, {8}, torch::kFloat, {.start = 2, .max = 64});
  EXPECT_EQ(r.largest_fit, 64U);
  EXPECT_TRUE(r.hit_max);
  // The trials' backward passes leave no gradient behind (find_batch_size zeroes them).
  EXPECT_TRUE(model->weight.grad().defined() == false ||
              model->weight.grad().abs().sum().item<float>() == 0.0F);
}

TEST(batch_size_test, LearningRateRules) {
  EXPECT_DOUBLE_EQ(gt::scale_learning_rate(0.1, 256, 1024), 0.4);
  EXPECT_DOUBLE_EQ(gt::scale_learning_rate(0.1, 256, 1024, gt::lr_rule::square_root), 0.2);
  EXPECT_DOUBLE_EQ(gt::scale_learning_rate(0.1, 256, 64), 0.025);
  EXPECT_THROW((void)gt::scale_learning_rate(0.1, 0, 64), gpufeed::logic_error);
  EXPECT_THROW((void)gt::scale_learning_rate(-1.0, 64, 64), gpufeed::logic_error);
  EXPECT_EQ(gt::effective_batch_size(32, 4, 8), 1024U);
}

}  // namespace
