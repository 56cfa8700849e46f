// Failing reads: sample_error under error_policy::raise, counted skips under error_policy::skip,
// timeout_error naming the late sample.

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
        EXPECT_TRUE(failing.contains(e.index())) << "sample_error names index " << e.index();
        EXPECT_NE(std::find(want[s].begin(), want[s].end(), e.index()), want[s].end())
            << "sample_error names index " << e.index() << ", which is not in this batch";
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

TEST(loader_errors_test, SeveralFailuresInOneBatchRaiseOnce) {
  auto data = std::make_shared<failing_dataset>(12, std::set<std::size_t>{4, 6, 7});
  loader l{data, small_options(4, 3)};
  ASSERT_TRUE(l.next().has_value());
  try {
    (void)l.next();
    FAIL() << "batch 1 has three failing samples";
  } catch (gpufeed::sample_error const& e) {
    EXPECT_TRUE(e.index() == 4 || e.index() == 6 || e.index() == 7) << e.index();
  }
  auto b = l.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->sequence(), 2U);
  EXPECT_TRUE(echo_content_matches(*b, 0));
  EXPECT_FALSE(l.next().has_value());
  EXPECT_EQ(l.snapshot().failed_batches, 1U);
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
