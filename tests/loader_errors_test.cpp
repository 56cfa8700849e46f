// Failing reads: sample_error under error_policy::raise, counted skips under error_policy::skip.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::error_policy;
using gpufeed::loader;
using gpufeed::loader_options;
using namespace gpufeed::test;  // NOLINT(google-build-using-namespace): test doubles

bool intersects(std::vector<std::size_t> const& batch, std::set<std::size_t> const& failing) {
  return std::any_of(batch.begin(), batch.end(), [&](auto i) { return failing.contains(i); });
}

// Consumes one epoch of a raise-policy loader over a failing_dataset: every batch of the plan
// either arrives intact or throws a sample_error naming one of its failing samples.
void expect_epoch_with_errors(loader& l, std::size_t n, loader_options const& o,
                              std::set<std::size_t> const& failing, std::uint64_t epoch,
                              std::size_t* failures = nullptr) {
  auto const want = expected_batches(n, o, epoch);
  ASSERT_EQ(l.epoch(), epoch);
  for (std::size_t s = 0; s < want.size(); ++s) {
    SCOPED_TRACE(::testing::Message() << "epoch " << epoch << " batch " << s);
    if (intersects(want[s], failing)) {
      try {
        auto b = l.next();
        ADD_FAILURE() << "a batch with a failing sample was delivered"
                      << (b ? "" : " (as the end of the epoch)");
        continue;
      } catch (gpufeed::sample_error const& e) {
        // Every failed sample of the batch, in batch order; the first one's in index() & co.
        std::vector<std::size_t> want_failed;
        for (auto i : want[s]) {
          if (failing.contains(i)) want_failed.push_back(i);
        }
        std::vector<std::size_t> reported;
        for (auto const& f : e.failures()) reported.push_back(f.index);
        EXPECT_EQ(reported, want_failed);
        EXPECT_EQ(e.index(), want_failed.front());
        EXPECT_EQ(e.epoch(), epoch);
        EXPECT_LT(e.worker(), o.workers);
        std::string what = e.what();
        EXPECT_NE(what.find(failure_message(e.index())), std::string::npos) << what;
        EXPECT_TRUE(contains_token(what, std::to_string(e.index()))) << what;
        EXPECT_EQ(nested_message(e), failure_message(e.index()));
        EXPECT_TRUE(e.file().empty()) << e.file();
        if (failures != nullptr) ++*failures;
      }
    } else {
      auto b = l.next();
      ASSERT_TRUE(b.has_value()) << "the epoch ended early";
      EXPECT_EQ(b->sequence(), s);
      EXPECT_EQ(std::vector<std::size_t>(b->indices().begin(), b->indices().end()), want[s]);
      EXPECT_TRUE(echo_content_matches(*b, 0));
    }
  }
  EXPECT_FALSE(l.next().has_value()) << "more batches than the plan has";
  EXPECT_EQ(l.epoch(), epoch + 1);
}

// ------------------------------------------------------------------------------------------------
// error_policy::raise

TEST(loader_errors_test, RaiseCarriesIndexEpochAndWorker) {
  std::size_t const n = 40;
  std::set<std::size_t> const failing{13};
  auto data = std::make_shared<failing_dataset>(n, failing);
  auto o = small_options(4, 3);
  loader l{data, o};
  for (int i = 0; i < 3; ++i) {
    auto b = l.next();
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->sequence(), static_cast<std::uint64_t>(i));
  }
  try {
    (void)l.next();
    FAIL() << "batch 3 holds sample 13, which throws";
  } catch (gpufeed::sample_error const& e) {
    EXPECT_EQ(e.index(), 13U);
    EXPECT_EQ(e.epoch(), 0U);
    EXPECT_LT(e.worker(), 3U);
    EXPECT_NE(std::string{e.what()}.find(failure_message(13)), std::string::npos) << e.what();
    EXPECT_TRUE(e.file().empty());
    try {
      std::rethrow_if_nested(e);
      ADD_FAILURE() << "no nested exception";
    } catch (std::runtime_error const& inner) {
      EXPECT_EQ(std::string{inner.what()}, failure_message(13));
    }
  }
  // The failed batch was consumed: the loader goes on with the next one.
  auto b = l.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->sequence(), 4U);
  EXPECT_EQ(index_column(*b), (std::vector<std::size_t>{16, 17, 18, 19}));
  b.reset();
  std::size_t rest = 0;
  while (auto c = l.next()) ++rest;
  EXPECT_EQ(rest, 5U);
  auto s = l.snapshot();
  EXPECT_EQ(s.failed_batches, 1U);
  EXPECT_EQ(s.batches, 9U);
  EXPECT_EQ(s.samples, 36U);
  EXPECT_EQ(s.skipped, 0U);
}

TEST(loader_errors_test, RaiseEveryEpochAnyWorkerCount) {
  std::size_t const n = 60;
  std::set<std::size_t> const failing{0, 17, 18, 42, 59};
  for (unsigned workers : {1U, 4U}) {
    SCOPED_TRACE(::testing::Message() << "workers=" << workers);
    auto data = std::make_shared<failing_dataset>(n, failing);
    auto o = small_options(5, workers);
    o.shuffle = true;
    o.seed = 77;
    loader l{data, o};
    std::size_t failures = 0;
    std::size_t want_failures = 0;
    for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
      for (auto const& b : expected_batches(n, o, epoch))
        want_failures += intersects(b, failing) ? 1U : 0U;
      expect_epoch_with_errors(l, n, o, failing, epoch, &failures);
    }
    EXPECT_EQ(failures, want_failures);
    EXPECT_EQ(l.snapshot().failed_batches, want_failures);
  }
}

TEST(loader_errors_test, FileErrorCarriesPath) {
  std::size_t const n = 12;
  auto data = std::make_shared<failing_dataset>(n, std::set<std::size_t>{5}, failure_kind::file);
  loader l{data, small_options(4, 2)};
  ASSERT_TRUE(l.next().has_value());
  try {
    (void)l.next();
    FAIL() << "sample 5 throws";
  } catch (gpufeed::sample_error const& e) {
    EXPECT_EQ(e.index(), 5U);
    EXPECT_EQ(e.file(), failure_path(5));
    std::string what = e.what();
    EXPECT_NE(what.find(failure_message(5)), std::string::npos) << what;
    EXPECT_NE(what.find(failure_path(5)), std::string::npos) << what;
    try {
      std::rethrow_if_nested(e);
      ADD_FAILURE() << "no nested exception";
    } catch (gpufeed::file_error const& inner) {
      EXPECT_EQ(inner.path(), failure_path(5));
    }
  }
  auto b = l.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->sequence(), 2U);
}

TEST(loader_errors_test, NonStdExceptionIsWrapped) {
  auto data = std::make_shared<failing_dataset>(8, std::set<std::size_t>{2}, failure_kind::non_std);
  loader l{data, small_options(4, 2)};
  try {
    (void)l.next();
    FAIL() << "sample 2 throws an int";
  } catch (gpufeed::sample_error const& e) {
    EXPECT_EQ(e.index(), 2U);
    EXPECT_NE(std::string{e.what()}.find("not derived from std::exception"), std::string::npos)
        << e.what();
    try {
      std::rethrow_if_nested(e);
      ADD_FAILURE() << "no nested exception";
    } catch (int value) {
      EXPECT_EQ(value, 2);
    }
  }
  auto b = l.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->sequence(), 1U);
}

TEST(loader_errors_test, SeveralFailuresInOneBatchRaiseOnceNamingEach) {
  // It once named only the first failed sample; the others were lost.
  auto data =
      std::make_shared<failing_dataset>(12, std::set<std::size_t>{4, 6, 7}, failure_kind::file);
  loader l{data, small_options(4, 3)};
  ASSERT_TRUE(l.next().has_value());
  try {
    (void)l.next();
    FAIL() << "batch 1 has three failing samples";
  } catch (gpufeed::sample_error const& e) {
    EXPECT_EQ(e.index(), 4U) << "the first failed sample, in batch order";
    EXPECT_EQ(e.file(), failure_path(4));
    EXPECT_EQ(nested_message(e), failure_path(4) + ": " + failure_message(4))
        << "the first failure's cause is nested";
    ASSERT_EQ(e.failures().size(), 3U);
    std::string const what = e.what();
    EXPECT_NE(what.find("3 samples of one batch failed"), std::string::npos) << what;
    for (std::size_t k = 0; k < 3; ++k) {
      auto const& f = e.failures()[k];
      std::size_t const index = std::vector<std::size_t>{4, 6, 7}[k];
      SCOPED_TRACE(::testing::Message() << "failure " << k);
      EXPECT_EQ(f.index, index);
      EXPECT_EQ(f.epoch, 0U);
      EXPECT_LT(f.worker, 3U);
      EXPECT_EQ(f.file, failure_path(index));
      EXPECT_NE(f.message.find(failure_message(index)), std::string::npos) << f.message;
      try {
        std::rethrow_exception(f.cause);
      } catch (gpufeed::file_error const& cause) {
        EXPECT_EQ(cause.path(), failure_path(index));
      }
      EXPECT_NE(what.find(failure_path(index)), std::string::npos) << what;
      EXPECT_NE(what.find(failure_message(index)), std::string::npos) << what;
    }
  }
  auto b = l.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->sequence(), 2U);
  EXPECT_TRUE(echo_content_matches(*b, 0));
  EXPECT_FALSE(l.next().has_value());
  EXPECT_EQ(l.snapshot().failed_batches, 1U);
}

TEST(loader_errors_test, AWholeBatchFailingListsEverySampleAndNamesTheFirstEight) {
  std::set<std::size_t> failing;
  for (std::size_t i = 12; i < 24; ++i) failing.insert(i);
  auto data = std::make_shared<failing_dataset>(24, failing);
  loader l{data, small_options(12, 4)};
  ASSERT_TRUE(l.next().has_value());
  try {
    (void)l.next();
    FAIL() << "every sample of batch 1 fails";
  } catch (gpufeed::sample_error const& e) {
    ASSERT_EQ(e.failures().size(), 12U);
    for (std::size_t k = 0; k < 12; ++k) EXPECT_EQ(e.failures()[k].index, 12 + k);
    std::string const what = e.what();
    EXPECT_NE(what.find("12 samples of one batch failed"), std::string::npos) << what;
    EXPECT_NE(what.find(failure_message(19)), std::string::npos) << what;
    EXPECT_EQ(what.find(failure_message(20)), std::string::npos) << "more than 8 listed";
    EXPECT_NE(what.find("and 4 more"), std::string::npos) << what;
  }
}

TEST(loader_errors_test, FailureInLastBatchThenEpochEnds) {
  auto data = std::make_shared<failing_dataset>(10, std::set<std::size_t>{9});
  loader l{data, small_options(4, 2)};
  ASSERT_TRUE(l.next().has_value());
  ASSERT_TRUE(l.next().has_value());
  EXPECT_THROW((void)l.next(), gpufeed::sample_error);
  EXPECT_FALSE(l.next().has_value());
  EXPECT_EQ(l.epoch(), 1U);
  auto b = l.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->epoch(), 1U);
  EXPECT_EQ(b->sequence(), 0U);
}

TEST(loader_errors_test, DiscardedFailureDoesNotSurfaceLater) {
  // Sample 6 fails only in epoch 0. Its failure is read ahead, then set_epoch(1) discards the
  // batches being prepared: epoch 1 must come through whole.
  std::size_t const n = 24;
  auto data =
      std::make_shared<failing_dataset>(n, std::set<std::size_t>{6}, failure_kind::runtime, 0, 0);
  auto o = small_options(4, 2);
  o.prefetch_depth = 3;
  loader l{data, o};
  ASSERT_TRUE(l.next().has_value());
  ASSERT_TRUE(eventually([&] { return data->throws() >= 1; })) << "sample 6 was never read";
  l.set_epoch(1);
  auto records = drain_epoch(l);
  EXPECT_EQ(index_lists(records), expected_batches(n, o, 1));
  EXPECT_EQ(l.snapshot().failed_batches, 0U);
}

// Fails sample 5 and holds sample 6 at a gate, both in epoch 0 only.
class fail_then_hold_dataset final : public echo_dataset {
 public:
  explicit fail_then_hold_dataset(std::size_t size, std::shared_ptr<gate> g)
      : echo_dataset{size}, gate_{std::move(g)} {}

 protected:
  void before_read(std::size_t index, gpufeed::read_context const& ctx) const override {
    if (ctx.epoch != 0) return;
    if (index == 5) throw std::runtime_error{failure_message(index)};
    if (index == 6) (void)gate_->pass(ctx, false);
  }

 private:
  std::shared_ptr<gate> gate_;
};

TEST(loader_errors_test, FailureInABatchCancelledBeforeItsLastReadIsForgotten) {
  // One worker reads batch 1 (samples 4..7) in order: 5 fails, 6 waits at the gate, and
  // set_epoch(1) cancels the batch, so 7 is never read and the batch never completes. The slot's
  // next batch must not inherit the failure recorded at position 1 (it once did).
  std::size_t const n = 16;
  auto g = std::make_shared<gate>();
  auto data = std::make_shared<fail_then_hold_dataset>(n, g);
  auto o = small_options(4, 1);
  o.prefetch_depth = 2;
  loader l{data, o};
  ASSERT_TRUE(l.next().has_value());
  ASSERT_TRUE(g->wait_entered(1)) << "sample 6 was never read";
  l.set_epoch(1);
  g->open();
  auto records = drain_epoch(l);
  EXPECT_EQ(index_lists(records), expected_batches(n, o, 1));
  EXPECT_EQ(l.snapshot().failed_batches, 0U);
}

// ------------------------------------------------------------------------------------------------
// error_policy::skip

TEST(loader_errors_test, SkipCompactsAndCounts) {
  std::size_t const n = 40;
  std::size_t const payload = 3;
  // Three failures over batches of four can never empty a whole batch.
  std::set<std::size_t> const failing{3, 10, 25};
  auto data = std::make_shared<failing_dataset>(n, failing, failure_kind::runtime, payload);
  auto o = small_options(4, 3);
  o.shuffle = true;
  o.seed = 3;
  o.on_error = error_policy::skip;
  loader l{data, o};
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    SCOPED_TRACE(::testing::Message() << "epoch " << epoch);
    auto const want = expected_batches(n, o, epoch);
    std::vector<std::size_t> met;
    for (std::size_t s = 0; s < want.size(); ++s) {
      auto b = l.next();
      ASSERT_TRUE(b.has_value()) << "batch " << s;
      EXPECT_EQ(b->sequence(), s);
      std::vector<std::size_t> kept;
      std::vector<std::size_t> skipped;
      for (auto i : want[s]) (failing.contains(i) ? skipped : kept).push_back(i);
      met.insert(met.end(), skipped.begin(), skipped.end());
      EXPECT_EQ(std::vector<std::size_t>(b->indices().begin(), b->indices().end()), kept)
          << "batch " << s;
      EXPECT_EQ(std::vector<std::size_t>(b->skipped().begin(), b->skipped().end()), skipped)
          << "batch " << s;
      EXPECT_EQ(b->size(), kept.size());
      // The remaining samples' content is compacted to rows 0 .. size()-1.
      EXPECT_TRUE(echo_content_matches(*b, payload)) << "batch " << s;
    }
    EXPECT_FALSE(l.next().has_value());
    EXPECT_EQ(met.size(), failing.size());
    auto s = l.snapshot();
    EXPECT_EQ(s.skipped, failing.size() * (epoch + 1));
    EXPECT_EQ(s.failed_batches, 0U);
    EXPECT_EQ(s.samples, (n - failing.size()) * (epoch + 1));
    auto listed = s.skipped_indices;
    ASSERT_EQ(listed.size(), failing.size() * (epoch + 1));
    std::multiset<std::size_t> listed_set(listed.begin(), listed.end());
    for (auto i : failing) EXPECT_EQ(listed_set.count(i), epoch + 1) << "index " << i;
  }
}

TEST(loader_errors_test, SkipListIsCappedButCountIsExact) {
  std::size_t const n = 30;
  std::set<std::size_t> const failing{1, 5, 9, 14, 22};
  auto data = std::make_shared<failing_dataset>(n, failing);
  auto o = small_options(4, 2);
  o.on_error = error_policy::skip;
  o.max_listed_skips = 2;
  loader l{data, o};
  std::size_t delivered = 0;
  std::size_t skipped = 0;
  while (auto b = l.next()) {
    delivered += b->size();
    skipped += b->skipped().size();
    EXPECT_TRUE(echo_content_matches(*b, 0));
  }
  EXPECT_EQ(delivered, n - failing.size());
  EXPECT_EQ(skipped, failing.size());
  auto s = l.snapshot();
  EXPECT_EQ(s.skipped, failing.size());
  ASSERT_EQ(s.skipped_indices.size(), 2U);
  for (auto i : s.skipped_indices) EXPECT_TRUE(failing.contains(i)) << i;
}

TEST(loader_errors_test, SkipWithFileErrorsAndManyWorkers) {
  std::size_t const n = 64;
  std::set<std::size_t> const failing{0, 7, 8, 31, 63};
  auto data = std::make_shared<failing_dataset>(n, failing, failure_kind::file, 2);
  auto o = small_options(8, 6);
  o.on_error = error_policy::skip;
  o.shuffle = true;
  o.seed = 404;
  loader l{data, o};
  std::vector<std::size_t> seen;
  std::vector<std::size_t> skipped;
  while (auto b = l.next()) {
    EXPECT_TRUE(echo_content_matches(*b, 2));
    seen.insert(seen.end(), b->indices().begin(), b->indices().end());
    skipped.insert(skipped.end(), b->skipped().begin(), b->skipped().end());
  }
  std::vector<std::size_t> want;
  for (auto i : gpufeed::sampler{n, true, 404}.epoch_indices(0)) {
    if (!failing.contains(i)) want.push_back(i);
  }
  EXPECT_EQ(seen, want);
  std::sort(skipped.begin(), skipped.end());
  EXPECT_EQ(skipped, std::vector<std::size_t>(failing.begin(), failing.end()));
  EXPECT_EQ(l.snapshot().skipped, failing.size());
}

}  // namespace
