// Open-ended epochs (adapted_dataset::open_ended_sources): the epoch ends when every source has
// ended, the batches made before are delivered in order and those a source could not make are
// passed over, the next epoch starts after, and every wait keeps its way out.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "gpufeed/detail/adapted_dataset.hpp"
#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::loader;
using gpufeed::logic_error;
using gpufeed::read_context;
using gpufeed::sample_spec;
using gpufeed::sample_view;
using gpufeed::detail::sample_read;
using namespace gpufeed::test;  // NOLINT(google-build-using-namespace): test doubles

constexpr std::int64_t per_epoch = 1'000'000;
constexpr std::int64_t per_source = 1'000;

// Each source makes `lengths[s]` batches per epoch, then ends; source s is read by the workers
// w with w % sources == s. A batch's values say which one it is: epoch, source and the source's
// batch number k (epoch * per_epoch + s * per_source + k). `failing` batches (source, k) fail;
// a source listed in `blocking` never ends: its next read waits until the loader stops.
class sourced_epochs final : public gpufeed::detail::adapted_dataset {
 public:
  explicit sourced_epochs(std::vector<std::size_t> lengths,
                          std::set<std::pair<std::size_t, std::size_t>> failing = {},
                          std::set<std::size_t> blocking = {})
      : lengths_{std::move(lengths)},
        failing_{std::move(failing)},
        blocking_{std::move(blocking)} {}

  std::size_t size() const override { return 0; }  // not read: the epochs are open-ended
  sample_spec spec() const override { return sample_spec{}.add("v", gpufeed::dtype::i64, {}); }
  void read(std::size_t, sample_view, read_context const&) const override {
    throw std::logic_error{"read() must not be called: this dataset reads whole batches"};
  }
  bool reads_claims() const override { return true; }
  bool reads_whole_batches() const override { return true; }
  std::size_t open_ended_sources() const override { return lengths_.size(); }

  void read_each(std::span<sample_read> reads) const override {
    auto const& ctx = reads.front().context;
    auto source = ctx.worker % lengths_.size();
    std::size_t k = 0;
    {
      std::lock_guard const lock{mutex_};
      auto const claim = claims_[ctx.epoch]++;
      if (round_robin) {
        source = claim % lengths_.size();
      }
      // A run of the epoch makes its batches again, as a source's iterator made anew does.
      auto const run = reads.front().run;
      runs_[ctx.epoch].insert(run);
      k = made_[{ctx.epoch, run, source}];
      if (k < lengths_[source]) {
        ++made_[{ctx.epoch, run, source}];
      }
    }
    if (k >= lengths_[source] && blocking_.contains(source)) {
      while (!ctx.stop_requested()) {
        std::this_thread::sleep_for(std::chrono::microseconds{200});
      }
      return;  // the loader stops: what this claim holds is discarded
    }
    if (k >= lengths_[source]) {
      {
        std::lock_guard const lock{mutex_};
        ended_[ctx.epoch].insert(source);
      }
      for (auto& r : reads) {
        r.ended = true;
        r.source = source;
      }
      return;
    }
    if (failing_.contains({source, k})) {
      auto const failure = std::make_exception_ptr(std::runtime_error{"a bad batch"});
      for (auto& r : reads) r.failure = failure;
      return;
    }
    auto const value = static_cast<std::int64_t>(ctx.epoch) * per_epoch +
                       static_cast<std::int64_t>(source) * per_source +
                       static_cast<std::int64_t>(k);
    for (auto& r : reads) r.out.as<std::int64_t>(0)[0] = value;
  }

  /// Claims go to the sources in turn, whichever worker reads them (set before the loader is
  /// made): every source is asked, however the workers share the claims.
  bool round_robin = false;

  /// read_each calls for `epoch` so far, ended ones included.
  [[nodiscard]] std::size_t claims(std::uint64_t epoch) const {
    std::lock_guard const lock{mutex_};
    auto const found = claims_.find(epoch);
    return found == claims_.end() ? 0 : found->second;
  }
  /// The runs of `epoch` read so far (sample_read::run).
  [[nodiscard]] std::size_t runs(std::uint64_t epoch) const {
    std::lock_guard const lock{mutex_};
    auto const found = runs_.find(epoch);
    return found == runs_.end() ? 0 : found->second.size();
  }
  /// The sources that have answered ended in `epoch`.
  [[nodiscard]] std::size_t ended(std::uint64_t epoch) const {
    std::lock_guard const lock{mutex_};
    auto const found = ended_.find(epoch);
    return found == ended_.end() ? 0 : found->second.size();
  }

 private:
  std::vector<std::size_t> lengths_;
  std::set<std::pair<std::size_t, std::size_t>> failing_;
  std::set<std::size_t> blocking_;
  mutable std::mutex mutex_;
  mutable std::map<std::tuple<std::uint64_t, std::uint64_t, std::size_t>, std::size_t> made_;
  mutable std::map<std::uint64_t, std::set<std::uint64_t>> runs_;
  mutable std::map<std::uint64_t, std::size_t> claims_;
  mutable std::map<std::uint64_t, std::set<std::size_t>> ended_;
};

struct delivered {
  std::uint64_t epoch = 0;
  std::uint64_t sequence = 0;
  std::int64_t value = 0;
};

// next() until the end of the epoch; every batch whole, of one value. Sample errors are counted.
std::vector<delivered> drain(loader& l, std::size_t* errors = nullptr) {
  std::vector<delivered> out;
  for (int calls = 0; calls < 10'000; ++calls) {
    std::optional<gpufeed::batch> b;
    try {
      b = l.next();
    } catch (gpufeed::sample_error const&) {
      if (errors != nullptr) ++*errors;
      continue;
    }
    if (!b) {
      return out;
    }
    auto const v = b->host_field(0).as<std::int64_t>();
    EXPECT_EQ(v.size(), b->size());
    for (auto const x : v) EXPECT_EQ(x, v[0]) << "a batch of mixed samples";
    out.push_back({b->epoch(), b->sequence(), v[0]});
  }
  ADD_FAILURE() << "the epoch never ended";
  return out;
}

// Checks an epoch's batches: in plan order, each source's batches 0 .. lengths[s]-1 once each,
// less the `failed` ones.
void expect_epoch(std::vector<delivered> const& got, std::uint64_t epoch,
                  std::vector<std::size_t> const& lengths,
                  std::set<std::pair<std::size_t, std::size_t>> const& failed = {}) {
  std::multiset<std::int64_t> want;
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    for (std::size_t k = 0; k < lengths[s]; ++k) {
      if (!failed.contains({s, k})) {
        want.insert(static_cast<std::int64_t>(epoch) * per_epoch +
                    static_cast<std::int64_t>(s * per_source + k));
      }
    }
  }
  std::multiset<std::int64_t> seen;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].epoch, epoch);
    if (i > 0) {
      EXPECT_LT(got[i - 1].sequence, got[i].sequence) << "batches out of plan order";
    }
    seen.insert(got[i].value);
  }
  EXPECT_EQ(seen, want);
}

gpufeed::loader_options options_for(unsigned workers) {
  auto o = small_options(4, workers);
  o.prefetch_depth = 3;
  return o;
}

TEST(loader_open_ended_test, EndsWhenEverySourceHasEnded) {
  std::vector<std::size_t> const lengths{5, 2, 7};
  loader l{std::make_shared<sourced_epochs>(lengths), options_for(3)};
  auto const got = drain(l);
  expect_epoch(got, 0, lengths);
  EXPECT_EQ(l.epoch(), 1U) << "past the end the loader stands at the next epoch's start";
}

TEST(loader_open_ended_test, NextEpochsWorkAfterTheEnd) {
  std::vector<std::size_t> const lengths{3, 4};
  loader l{std::make_shared<sourced_epochs>(lengths), options_for(2)};
  for (std::uint64_t e = 0; e < 3; ++e) {
    l.set_epoch(e);  // as a Python loop does before each epoch: keeps what is prepared
    expect_epoch(drain(l), e, lengths);
  }
}

TEST(loader_open_ended_test, SetEpochElsewhereReadsThatEpochAnew) {
  std::vector<std::size_t> const lengths{3, 2};
  loader l{std::make_shared<sourced_epochs>(lengths), options_for(2)};
  (void)l.next();  // a batch of epoch 0, the rest left unread
  l.set_epoch(5);
  expect_epoch(drain(l), 5, lengths);
}

TEST(loader_open_ended_test, AnEpochReadAgainIsANewRun) {
  std::vector<std::size_t> const lengths{3, 2};
  auto const data = std::make_shared<sourced_epochs>(lengths);
  loader l{data, options_for(2)};
  expect_epoch(drain(l), 0, lengths);
  l.set_epoch(0);  // the same epoch again: its sources must begin it anew
  expect_epoch(drain(l), 0, lengths);
  // At least one run per read of the epoch (a batch prepared ahead and then discarded by
  // set_epoch may have begun one more).
  EXPECT_GE(data->runs(0), 2U);
  l.set_epoch(1);
  expect_epoch(drain(l), 1, lengths);
  l.set_epoch(1);
  expect_epoch(drain(l), 1, lengths);
  EXPECT_GE(data->runs(1), 2U);
}

TEST(loader_open_ended_test, SourcesWithoutSamplesEndTheEpochEmpty) {
  loader l{std::make_shared<sourced_epochs>(std::vector<std::size_t>{0, 0}), options_for(2)};
  for (std::uint64_t e = 0; e < 2; ++e) {
    EXPECT_FALSE(l.next().has_value()) << "epoch " << e;
    EXPECT_EQ(l.epoch(), e + 1);
  }
}

TEST(loader_open_ended_test, OneEmptySourceLeavesTheOthers) {
  std::vector<std::size_t> const lengths{0, 6};
  loader l{std::make_shared<sourced_epochs>(lengths), options_for(2)};
  expect_epoch(drain(l), 0, lengths);
  expect_epoch(drain(l), 1, lengths);
}

TEST(loader_open_ended_test, NothingOfAnEpochIsPlannedAfterItsEnd) {
  std::vector<std::size_t> const lengths{4, 1};
  auto data = std::make_shared<sourced_epochs>(lengths);
  loader l{data, options_for(2)};
  expect_epoch(drain(l), 0, lengths);
  auto const claims = data->claims(0);
  expect_epoch(drain(l), 1, lengths);
  EXPECT_EQ(data->claims(0), claims) << "epoch 0 was read after its end";
}

TEST(loader_open_ended_test, TheNextEpochWaitsForTheConsumer) {
  // Every source ends its epoch 0 while the consumer holds its first batch: the next epoch is
  // not started (its sources would begin it), and set_epoch(1) from there reads it whole.
  std::vector<std::size_t> const lengths{1, 1};
  auto data = std::make_shared<sourced_epochs>(lengths);
  data->round_robin = true;
  auto o = options_for(2);
  o.prefetch_depth = 6;  // room for every batch of epoch 0, an ended one per source, and more
  loader l{data, o};
  auto first = l.next();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(eventually([&] { return data->ended(0) >= 2; })) << "the sources never ended";
  EXPECT_EQ(data->claims(1), 0U) << "epoch 1 was read before the consumer reached it";
  l.set_epoch(1);
  expect_epoch(drain(l), 1, lengths);
}

TEST(loader_open_ended_test, AFailedBatchRaisesAndTheEpochGoesOn) {
  std::vector<std::size_t> const lengths{4, 3};
  std::set<std::pair<std::size_t, std::size_t>> const failing{{0, 1}};
  loader l{std::make_shared<sourced_epochs>(lengths, failing), options_for(2)};
  std::size_t errors = 0;
  auto const got = drain(l, &errors);
  EXPECT_EQ(errors, 1U);
  expect_epoch(got, 0, lengths, failing);
  expect_epoch(drain(l), 1, lengths, failing);
}

TEST(loader_open_ended_test, AWaitForASourceThatNeverEndsTimesOut) {
  auto o = options_for(2);
  o.timeout = std::chrono::milliseconds{200};
  loader l{std::make_shared<sourced_epochs>(std::vector<std::size_t>{2, 1},
                                            std::set<std::pair<std::size_t, std::size_t>>{},
                                            std::set<std::size_t>{1}),
           o};
  bool timed_out = false;
  for (int calls = 0; calls < 10 && !timed_out; ++calls) {
    try {
      ASSERT_TRUE(l.next().has_value()) << "the epoch ended with a source still reading";
    } catch (gpufeed::timeout_error const&) {
      timed_out = true;
    }
  }
  EXPECT_TRUE(timed_out);
  auto const r = l.try_next_for(std::chrono::milliseconds{20});
  EXPECT_EQ(r.what, gpufeed::next_result::status::pending);
  // The loader's destructor stops the source's read and returns.
}

TEST(loader_open_ended_test, StopsWhileEveryWorkerReadsAnEndlessSource) {
  auto data = std::make_shared<sourced_epochs>(std::vector<std::size_t>{0, 0},
                                               std::set<std::pair<std::size_t, std::size_t>>{},
                                               std::set<std::size_t>{0, 1});
  {
    loader l{data, options_for(2)};
    ASSERT_TRUE(eventually([&] { return data->claims(0) >= 2; })) << "the workers never read";
    auto const r = l.try_next_for(std::chrono::milliseconds{20});
    EXPECT_EQ(r.what, gpufeed::next_result::status::pending);
  }  // the destructor stops both reads and returns
}

TEST(loader_open_ended_test, SaysItsLengthIsUnknownAndRefusesAState) {
  loader l{std::make_shared<sourced_epochs>(std::vector<std::size_t>{2}), options_for(1)};
  EXPECT_EQ(l.batches_per_epoch(), 0U);
  EXPECT_EQ(l.samples_per_epoch(), 0U);
  EXPECT_NE(l.plan().find("open-ended"), std::string::npos) << l.plan();
  try {
    (void)l.state();
    ADD_FAILURE() << "state() of an open-ended epoch";
  } catch (logic_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("open-ended"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)l.builtin_order(0), logic_error);
  expect_epoch(drain(l), 0, {2});
}

TEST(loader_open_ended_test, RefusesAnOrderItCannotHave) {
  auto o = options_for(1);
  o.shuffle = true;
  EXPECT_THROW((loader{std::make_shared<sourced_epochs>(std::vector<std::size_t>{2}), o}),
               logic_error);
}

}  // namespace
