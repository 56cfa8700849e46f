// Datasets whose layout comes from their first sample (adapted_dataset::layout_from_first_sample):
// the loader reads nothing on the thread that makes it, learns the layout from the first sample a
// worker stages, writes every staged sample into its batch (each sample read once), reports a
// staged failure as its batch's, and keeps the consumer's position set before the layout is
// known. Also datasets that read whole claims (read_each) and worker_error.

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gpufeed/detail/adapted_dataset.hpp"
#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace gpufeed {
namespace {

using namespace std::chrono_literals;

// Sample i is {i as int64, i * 10 as float32 [2]}. Reads are counted per index, and the threads
// that read are recorded, so a test can say who read what and how often.
class learned_dataset : public detail::adapted_dataset {
 public:
  explicit learned_dataset(std::size_t n) : n_{n} {}

  std::size_t size() const override { return n_; }
  sample_spec spec() const override {
    throw std::logic_error{"spec() must not be called: the layout comes from the first sample"};
  }
  bool layout_from_first_sample() const override { return true; }

  void read(std::size_t index, sample_view out, read_context const& ctx) const override {
    count(index, ctx.epoch);
    before_read(index, ctx);
    write(index, out);
  }

  class staged final : public detail::staged_sample {
   public:
    staged(learned_dataset const& owner, std::size_t index) : owner_{owner}, index_{index} {}
    sample_spec spec() const override { return owner_.layout(); }
    void write(sample_view out) override { owner_.write(index_, out); }

   private:
    learned_dataset const& owner_;
    std::size_t index_;
  };

  std::unique_ptr<detail::staged_sample> stage(std::size_t index,
                                               read_context const& ctx) const override {
    count(index, ctx.epoch);
    {
      std::lock_guard const lock{mutex_};
      stage_threads_.push_back(std::this_thread::get_id());
    }
    before_read(index, ctx);
    return std::make_unique<staged>(*this, index);
  }

  void layout_chosen(detail::staged_sample const& first) const override {
    std::lock_guard const lock{mutex_};
    ++chosen_;
    chosen_spec_ = first.spec();
  }

  static sample_spec layout() {
    return sample_spec{}.add("i", dtype::i64, {}).add("x", dtype::f32, {2});
  }

  /// How often each sample was read (staged or read) in `epoch`.
  std::map<std::size_t, int> reads(std::uint64_t epoch = 0) const {
    std::lock_guard const lock{mutex_};
    std::map<std::size_t, int> out;
    for (auto const& [key, times] : reads_) {
      if (key.first == epoch) out[key.second] = times;
    }
    return out;
  }
  std::vector<std::thread::id> stage_threads() const {
    std::lock_guard const lock{mutex_};
    return stage_threads_;
  }
  int chosen() const {
    std::lock_guard const lock{mutex_};
    return chosen_;
  }

 protected:
  // Tests add waits or failures here; runs for stage() and read() alike.
  virtual void before_read(std::size_t, read_context const&) const {}

 private:
  void count(std::size_t index, std::uint64_t epoch) const {
    std::lock_guard const lock{mutex_};
    ++reads_[{epoch, index}];
  }
  static void write(std::size_t index, sample_view out) {
    out.as<std::int64_t>(0)[0] = static_cast<std::int64_t>(index);
    out.as<float>(1)[0] = static_cast<float>(index) * 10;
    out.as<float>(1)[1] = static_cast<float>(index) * 10;
  }

  std::size_t n_;
  mutable std::mutex mutex_;
  mutable std::map<std::pair<std::uint64_t, std::size_t>, int> reads_;  // (epoch, index)
  mutable std::vector<std::thread::id> stage_threads_;
  mutable int chosen_ = 0;
  mutable sample_spec chosen_spec_;
};

std::vector<std::int64_t> indices_of(batch const& b) {
  auto const* p = static_cast<std::int64_t const*>(b.host_field(0).data());
  return {p, p + b.size()};
}

std::vector<std::int64_t> epoch_indices(loader& l) {
  std::vector<std::int64_t> all;
  while (auto b = l.next()) {
    auto const got = indices_of(*b);
    all.insert(all.end(), got.begin(), got.end());
  }
  return all;
}

std::vector<std::int64_t> iota(std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> v;
  for (auto i = from; i < to; ++i) v.push_back(i);
  return v;
}

TEST(LayoutProbe, ReadsNothingOnTheCallingThreadAndEachSampleOnce) {
  auto data = std::make_shared<learned_dataset>(40);
  loader l{data, {.batch_size = 8, .workers = 3, .prefetch_depth = 2}};
  EXPECT_EQ(l.batches_per_epoch(), 5U);  // known before the layout
  EXPECT_EQ(epoch_indices(l), iota(0, 40));
  auto const reads = data->reads();
  ASSERT_EQ(reads.size(), 40U);
  for (auto const& [index, times] : reads) {
    EXPECT_EQ(times, 1) << "sample " << index << " read " << times << " times";
  }
  auto const threads = data->stage_threads();
  ASSERT_FALSE(threads.empty());
  for (auto const& t : threads) {
    EXPECT_NE(t, std::this_thread::get_id()) << "a sample was staged on the calling thread";
  }
  EXPECT_EQ(data->chosen(), 1);
  EXPECT_EQ(l.batch_bytes(), 8U * learned_dataset::layout().bytes_per_sample());
  EXPECT_EQ(epoch_indices(l), iota(0, 40));  // the next epoch reads them again, once
  for (auto const& [index, times] : data->reads(1)) {
    EXPECT_EQ(times, 1) << "sample " << index;
  }
}

// The first reads of epoch 0 wait for one another: all workers must be reading at once. (Only
// epoch 0's: the next epoch's, prefetched while the test ends, would wait for ever.)
class barrier_dataset final : public learned_dataset {
 public:
  barrier_dataset(std::size_t n, std::ptrdiff_t parties)
      : learned_dataset{n}, barrier_{parties}, parties_{parties} {}

 protected:
  void before_read(std::size_t index, read_context const& ctx) const override {
    if (ctx.epoch == 0 && static_cast<std::ptrdiff_t>(index) < parties_) {
      barrier_.arrive_and_wait();
    }
  }

 private:
  mutable std::barrier<> barrier_;
  std::ptrdiff_t parties_;
};

TEST(LayoutProbe, ReadsThatWaitForEveryWorkerDoNotHang) {
  auto data = std::make_shared<barrier_dataset>(24, 4);
  loader l{data, {.batch_size = 6, .workers = 4, .prefetch_depth = 2}};
  EXPECT_EQ(epoch_indices(l), iota(0, 24));
}

class failing_learned final : public learned_dataset {
 public:
  failing_learned(std::size_t n, std::set<std::size_t> failing)
      : learned_dataset{n}, failing_{std::move(failing)} {}

 protected:
  void before_read(std::size_t index, read_context const&) const override {
    if (failing_.contains(index)) {
      throw std::runtime_error{"cannot read " + std::to_string(index)};
    }
  }

 private:
  std::set<std::size_t> failing_;
};

TEST(LayoutProbe, AFailedStagedSampleIsItsBatchsSampleError) {
  auto data = std::make_shared<failing_learned>(20, std::set<std::size_t>{0});
  loader l{data, {.batch_size = 5, .workers = 2, .prefetch_depth = 2}};
  try {
    (void)l.next();
    FAIL() << "the first batch holds the failed sample 0";
  } catch (sample_error const& e) {
    EXPECT_EQ(e.index(), 0U);
    EXPECT_NE(std::string{e.what()}.find("cannot read 0"), std::string::npos) << e.what();
  }
  EXPECT_EQ(epoch_indices(l), iota(5, 20));  // the batch is consumed; the rest follow
  EXPECT_EQ(data->reads().at(0), 1);
}

TEST(LayoutProbe, SkippedStagedSamplesAreCountedAndALaterOneGivesTheLayout) {
  auto data = std::make_shared<failing_learned>(12, std::set<std::size_t>{0, 1, 2, 3, 4, 5});
  loader l{data,
           {.batch_size = 4, .workers = 2, .prefetch_depth = 2, .on_error = error_policy::skip}};
  EXPECT_EQ(epoch_indices(l), iota(6, 12));
  EXPECT_EQ(l.snapshot().skipped, 6U);
}

// As torch's loader: under raise each batch whose every sample fails raises once, the next
// call goes on with the next batch, and an epoch of such batches ends as any epoch does.
TEST(LayoutProbe, FirstBatchesWhoseEverySampleFailsRaiseOnceEachAndTheEpochEnds) {
  std::set<std::size_t> all;
  for (std::size_t i = 0; i < 10; ++i) all.insert(i);
  auto data = std::make_shared<failing_learned>(10, all);
  loader l{data, {.batch_size = 3, .workers = 2, .prefetch_depth = 2}};
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::size_t> first_failed;
    for (;;) {
      try {
        if (!l.next().has_value()) break;
        FAIL() << "no sample can be read";
        break;
      } catch (sample_error const& e) {
        first_failed.push_back(e.failures().front().index);
        ASSERT_LE(first_failed.size(), 4U) << "an epoch of 4 batches went on: " << e.what();
      }
    }
    EXPECT_EQ(first_failed, (std::vector<std::size_t>{0, 3, 6, 9})) << "epoch " << epoch;
  }
  EXPECT_EQ(l.epoch(), 2U);
}

TEST(LayoutProbe, AFailedFirstBatchIsFollowedByTheLayoutOfTheNext) {
  auto data = std::make_shared<failing_learned>(9, std::set<std::size_t>{0, 1, 2});
  loader l{data, {.batch_size = 3, .workers = 2, .prefetch_depth = 2}};
  try {
    (void)l.next();
    FAIL() << "the first batch's samples all fail";
  } catch (sample_error const& e) {
    ASSERT_EQ(e.failures().size(), 3U) << e.what();
    EXPECT_EQ(e.failures()[2].index, 2U);
  }
  EXPECT_EQ(epoch_indices(l), iota(3, 9));
}

TEST(LayoutProbe, TryNextForSaysTheEpochEndedWhenEveryBatchFailed) {
  auto data = std::make_shared<failing_learned>(3, std::set<std::size_t>{0, 1, 2});
  loader l{data, {.batch_size = 3, .workers = 1, .prefetch_depth = 2}};
  EXPECT_THROW((void)l.try_next_for(std::chrono::seconds{30}), sample_error);
  EXPECT_EQ(l.try_next_for(std::chrono::seconds{30}).what, next_result::status::end_of_epoch);
  EXPECT_THROW((void)l.try_next_for(std::chrono::seconds{30}), sample_error);  // the next epoch
}

TEST(LayoutProbe, UnderSkipEverySampleFailingFailsTheLoaderAtTheEpochsEnd) {
  std::set<std::size_t> all;
  for (std::size_t i = 0; i < 10; ++i) all.insert(i);
  auto data = std::make_shared<failing_learned>(10, all);
  loader l{data, {.batch_size = 3, .workers = 2, .on_error = error_policy::skip}};
  EXPECT_THROW((void)l.next(), sample_error);
  EXPECT_EQ(data->reads().size(), 10U);
}

TEST(LayoutProbe, TheConsumersPositionBeforeTheLayoutIsKept) {
  auto data = std::make_shared<learned_dataset>(30);
  loader_options const options{.batch_size = 5, .workers = 2, .shuffle = true, .seed = 9};
  loader reference{std::make_shared<learned_dataset>(30), options};
  reference.set_epoch(3);
  (void)reference.next();
  (void)reference.next();
  auto const state = reference.state();
  auto const rest = epoch_indices(reference);

  loader l{data, options};
  l.set_epoch(1);  // staged reads of epoch 0, then of epoch 1, are discarded by what follows
  EXPECT_EQ(l.epoch(), 1U);
  l.restore(state);
  EXPECT_EQ(l.state().to_string(), state.to_string());
  EXPECT_EQ(epoch_indices(l), rest);
  EXPECT_EQ(l.epoch(), 4U);
}

TEST(LayoutProbe, ARestorePastTheEpochsEndIsRefusedBeforeAndAfterTheLayout) {
  loader_options const options{.batch_size = 5, .workers = 2};
  loader reference{std::make_shared<learned_dataset>(30), options};
  auto past_the_end = reference.state();
  past_the_end.next_sequence = 7;  // 30 samples make 6 batches
  auto const refusal = [&](loader& l) {
    try {
      l.restore(past_the_end);
    } catch (logic_error const& e) {
      return std::string{e.what()};
    }
    return std::string{"no exception"};
  };
  loader before{std::make_shared<learned_dataset>(30), options};  // still learning the layout
  EXPECT_NE(refusal(before).find("past the epoch's 6 batches"), std::string::npos)
      << refusal(before);
  loader after{std::make_shared<learned_dataset>(30), options};
  ASSERT_TRUE(after.next().has_value());  // the core is made
  EXPECT_NE(refusal(after).find("past the epoch's 6 batches"), std::string::npos) << refusal(after);
}

TEST(LayoutProbe, AGivenOrderIsWaitedForAndKept) {
  auto data = std::make_shared<learned_dataset>(20);
  loader l{data, {.batch_size = 4, .workers = 2, .order = sample_order::given}};
  std::this_thread::sleep_for(20ms);  // the probe waits for an order: nothing is read
  EXPECT_TRUE(data->reads().empty());
  l.set_epoch(0, epoch_order{.indices = {19, 3, 7, 11, 2, 5}});
  EXPECT_EQ(epoch_indices(l), (std::vector<std::int64_t>{19, 3, 7, 11, 2, 5}));
}

// Every read waits until the loader stops.
class blocked_learned final : public learned_dataset {
 public:
  using learned_dataset::learned_dataset;

 protected:
  void before_read(std::size_t, read_context const& ctx) const override {
    while (!ctx.stop_requested()) std::this_thread::sleep_for(1ms);
  }
};

TEST(LayoutProbe, DestroyingTheLoaderWhileItStagesReturns) {
  auto data = std::make_shared<blocked_learned>(10);
  {
    loader l{data, {.batch_size = 2, .workers = 3}};
    auto const r = l.try_next_for(20ms);
    EXPECT_EQ(r.what, next_result::status::pending);
  }
  EXPECT_FALSE(data->reads().empty());
}

TEST(LayoutProbe, TheLoadersTimeoutCoversTheFirstSample) {
  auto data = std::make_shared<blocked_learned>(10);
  loader l{data, {.batch_size = 2, .workers = 1, .timeout = 30ms}};
  EXPECT_THROW((void)l.next(), timeout_error);
}

TEST(LayoutProbe, TheLoadersTimeoutCoversTheFirstSampleOverManyShortWaits) {
  auto data = std::make_shared<blocked_learned>(10);
  loader l{data, {.batch_size = 2, .workers = 1, .timeout = 100ms}};
  auto const start = std::chrono::steady_clock::now();
  bool timed_out = false;
  // Waits of 10 ms each, as the Python binding's (it checks for signals between them).
  while (!timed_out && std::chrono::steady_clock::now() - start < 30s) {
    try {
      EXPECT_EQ(l.try_next_for(10ms).what, next_result::status::pending);
    } catch (timeout_error const&) {
      timed_out = true;
    }
  }
  EXPECT_TRUE(timed_out) << "the timeout restarted with every short wait";
}

// Reads whole claims, and fails one sample of each claim that holds index 7.
class claim_dataset final : public detail::adapted_dataset {
 public:
  std::size_t size() const override { return 64; }
  sample_spec spec() const override { return sample_spec{}.add("i", dtype::i64, {}); }
  bool reads_claims() const override { return true; }
  void read(std::size_t, sample_view, read_context const&) const override {
    throw std::logic_error{"read() must not be called: this dataset reads claims"};
  }
  void read_each(std::span<detail::sample_read> reads) const override {
    claims_.fetch_add(1);
    largest_.store(std::max(largest_.load(), reads.size()));
    for (auto& r : reads) {
      if (r.index == 7) {
        r.failure = std::make_exception_ptr(std::runtime_error{"seven"});
        continue;
      }
      r.out.as<std::int64_t>(0)[0] = static_cast<std::int64_t>(r.index);
    }
  }
  mutable std::atomic<int> claims_{0};
  mutable std::atomic<std::size_t> largest_{0};
};

TEST(ReadEach, ClaimsReachTheDatasetWholeAndEachFailureIsItsSamples) {
  auto data = std::make_shared<claim_dataset>();
  loader l{data, {.batch_size = 32, .workers = 1, .on_error = error_policy::skip}};
  auto got = epoch_indices(l);
  auto want = iota(0, 64);
  want.erase(want.begin() + 7);
  EXPECT_EQ(got, want);
  EXPECT_GT(data->largest_.load(), 1U);  // more than one sample per call
  EXPECT_LT(data->claims_.load(), 64);
  EXPECT_EQ(l.snapshot().skipped_indices, (std::vector<std::size_t>{7}));
}

// Takes its claims whole: each must be one batch, all of it.
class whole_batch_dataset final : public detail::adapted_dataset {
 public:
  std::size_t size() const override { return 50; }
  sample_spec spec() const override { return sample_spec{}.add("i", dtype::i64, {}); }
  bool reads_claims() const override { return true; }
  bool reads_whole_batches() const override { return true; }
  void read(std::size_t, sample_view, read_context const&) const override {
    throw std::logic_error{"read() must not be called: this dataset reads whole batches"};
  }
  void read_each(std::span<detail::sample_read> reads) const override {
    {
      std::lock_guard const lock{mutex_};
      claims_.push_back(reads.size());
      firsts_.push_back(reads.front().out.position());
    }
    for (auto& r : reads) r.out.as<std::int64_t>(0)[0] = static_cast<std::int64_t>(r.index);
  }
  mutable std::mutex mutex_;
  mutable std::vector<std::size_t> claims_;
  mutable std::vector<std::size_t> firsts_;
};

TEST(ReadEach, WholeBatchClaimsGiveEachBatchToOneCall) {
  auto data = std::make_shared<whole_batch_dataset>();
  loader l{data, {.batch_size = 8, .workers = 3, .prefetch_depth = 3}};
  EXPECT_EQ(epoch_indices(l), iota(0, 50));
  std::lock_guard const lock{data->mutex_};
  // Batches of 8 and, last in an epoch, of 2 (the next epoch's prefetched ones count too).
  ASSERT_GE(data->claims_.size(), 7U);
  for (auto const n : data->claims_) EXPECT_TRUE(n == 8 || n == 2) << "a claim of " << n;
  EXPECT_GE(std::count(data->claims_.begin(), data->claims_.end(), 2U), 1);
  for (auto const p : data->firsts_) EXPECT_EQ(p, 0U) << "a claim that starts inside a batch";
}

// Sample 5's read finds its worker gone.
class lost_worker_dataset final : public detail::adapted_dataset {
 public:
  std::size_t size() const override { return 40; }
  sample_spec spec() const override { return sample_spec{}.add("i", dtype::i64, {}); }
  void read(std::size_t index, sample_view out, read_context const&) const override {
    if (index == 5) {
      throw worker_error{"worker 0 died reading sample 5"};
    }
    out.as<std::int64_t>(0)[0] = static_cast<std::int64_t>(index);
  }
};

TEST(WorkerError, StopsTheLoaderAndEveryLaterCallSaysSo) {
  loader l{std::make_shared<lost_worker_dataset>(),
           {.batch_size = 4, .workers = 2, .on_error = error_policy::skip}};
  bool seen = false;
  for (int call = 0; call < 20 && !seen; ++call) {
    try {
      (void)l.next();
    } catch (worker_error const& e) {
      seen = true;
      EXPECT_NE(std::string{e.what()}.find("worker 0 died"), std::string::npos);
    }
  }
  ASSERT_TRUE(seen) << "a worker_error is never a skipped sample";
  EXPECT_THROW((void)l.next(), worker_error);
}

}  // namespace
}  // namespace gpufeed
