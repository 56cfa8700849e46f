// The loader's delivery contract: every sample once per epoch, in plan order, the same order for
// any worker count, rank shards, accumulation steps, resume, set_epoch and the counters.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/host_resources.hpp"
#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::loader;
using gpufeed::loader_options;
using gpufeed::tail_policy;
using namespace gpufeed::test;  // NOLINT(google-build-using-namespace): test doubles

using index_lists_t = std::vector<std::vector<std::size_t>>;

std::vector<std::size_t> sorted(std::vector<std::size_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::size_t> iota_vector(std::size_t n) {
  std::vector<std::size_t> v(n);
  std::iota(v.begin(), v.end(), std::size_t{0});
  return v;
}

char const* name(tail_policy p) {
  return p == tail_policy::keep ? "keep" : "drop";
}

// ------------------------------------------------------------------------------------------------
// Exactly once per epoch, for 1..16 workers and both tail policies.

class loader_test_exactly_once
    : public ::testing::TestWithParam<std::tuple<unsigned, tail_policy>> {};

TEST_P(loader_test_exactly_once, EverySampleOncePerEpoch) {
  auto const [workers, last_batch] = GetParam();
  std::size_t const n = 103;
  std::size_t const payload = 5;
  auto data = std::make_shared<echo_dataset>(n, payload);
  auto o = small_options(8, workers);
  o.last_batch = last_batch;
  o.shuffle = true;
  o.seed = 3;
  loader l{data, o};
  std::size_t const full = n / 8;
  std::size_t const want_batches = last_batch == tail_policy::keep ? full + 1 : full;
  std::size_t const want_samples = last_batch == tail_policy::keep ? n : full * 8;
  EXPECT_EQ(l.batches_per_epoch(), want_batches);
  EXPECT_EQ(l.samples_per_epoch(), want_samples);

  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    ASSERT_EQ(l.epoch(), epoch);
    auto order = gpufeed::sampler{n, true, 3}.epoch_indices(epoch);
    std::vector<std::size_t> seen;
    std::uint64_t sequence = 0;
    while (auto b = l.next()) {
      EXPECT_EQ(b->epoch(), epoch);
      EXPECT_EQ(b->sequence(), sequence++);
      ASSERT_TRUE(echo_content_matches(*b, payload));
      auto context = b->field("context").as<std::int64_t>();
      for (std::size_t i = 0; i < b->size(); ++i) {
        EXPECT_LT(context[3 * i + 1], static_cast<std::int64_t>(workers)) << "worker id";
        // The read's seed is the one of (loader seed, epoch, index), whoever read it.
        EXPECT_EQ(context[3 * i + 2],
                  std::bit_cast<std::int64_t>(gpufeed::mix_seed(3, epoch, b->indices()[i])))
            << "index " << b->indices()[i];
      }
      if (b->sequence() + 1 < want_batches) {
        EXPECT_EQ(b->size(), 8U);
      }
      seen.insert(seen.end(), b->indices().begin(), b->indices().end());
      ASSERT_LE(sequence, want_batches + 1) << "more batches than the plan has";
    }
    EXPECT_EQ(sequence, want_batches);
    // The delivered samples are the epoch's order (its kept prefix), each exactly once.
    ASSERT_EQ(seen.size(), want_samples);
    EXPECT_EQ(seen, std::vector<std::size_t>(
                        order.begin(), order.begin() + static_cast<std::ptrdiff_t>(want_samples)));
    auto unique = sorted(seen);
    EXPECT_EQ(std::adjacent_find(unique.begin(), unique.end()), unique.end()) << "duplicates";
    if (last_batch == tail_policy::keep) {
      EXPECT_EQ(unique, iota_vector(n));
    }
    // Each delivered sample was read once in this epoch: nothing was read twice.
    for (auto i : seen) EXPECT_EQ(data->reads(epoch, i), 1U) << "index " << i;
  }
  EXPECT_EQ(data->bad_indices(), 0U);
  EXPECT_EQ(data->bad_contexts(), 0U);
}

INSTANTIATE_TEST_SUITE_P(
    Workers, loader_test_exactly_once,
    ::testing::Combine(::testing::Range(1U, 17U),
                       ::testing::Values(tail_policy::keep, tail_policy::drop)),
    [](::testing::TestParamInfo<std::tuple<unsigned, tail_policy>> const& param_info) {
      return "workers" + std::to_string(std::get<0>(param_info.param)) + "_" +
             name(std::get<1>(param_info.param));
    });

// ------------------------------------------------------------------------------------------------
// Order.

TEST(loader_test, InOrderDespiteOutOfOrderCompletion) {
  // Earlier indices sleep longer (up to ~2 ms), so later samples and later batches finish first.
  auto delay = [](std::size_t i) {
    return std::chrono::microseconds{static_cast<long>((7 - i % 8) * 250 + ((i / 8) % 2) * 500)};
  };
  for (bool shuffle : {false, true}) {
    SCOPED_TRACE(shuffle ? "shuffled" : "unshuffled");
    std::size_t const n = 48;
    auto data = std::make_shared<sleepy_dataset>(n, delay, 3);
    auto o = small_options(6, 4);
    o.prefetch_depth = 3;
    o.shuffle = shuffle;
    o.seed = 8;
    loader l{data, o};
    for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
      auto records = drain_epoch(l, 3);
      for (std::size_t s = 0; s < records.size(); ++s) {
        EXPECT_EQ(records[s].sequence, s);
        EXPECT_EQ(records[s].epoch, epoch);
      }
      EXPECT_EQ(index_lists(records), expected_batches(n, o, epoch)) << "epoch " << epoch;
    }
  }
}

TEST(loader_test, SameSeedSameOrderForAnyWorkerCount) {
  std::size_t const n = 61;
  std::optional<index_lists_t> first_epoch0;
  std::optional<index_lists_t> first_epoch1;
  for (unsigned workers : {1U, 2U, 7U, 16U}) {
    SCOPED_TRACE(::testing::Message() << "workers=" << workers);
    auto data = std::make_shared<echo_dataset>(n);
    auto o = small_options(5, workers);
    o.shuffle = true;
    o.seed = 2024;
    loader l{data, o};
    auto e0 = index_lists(drain_epoch(l));
    auto e1 = index_lists(drain_epoch(l));
    EXPECT_EQ(e0, expected_batches(n, o, 0));
    EXPECT_EQ(e1, expected_batches(n, o, 1));
    if (!first_epoch0) {
      first_epoch0 = e0;
      first_epoch1 = e1;
    }
    EXPECT_EQ(e0, *first_epoch0);
    EXPECT_EQ(e1, *first_epoch1);
    EXPECT_NE(e0, e1) << "two epochs came in the same order";
  }
}

TEST(loader_test, DifferentSeedsGiveDifferentOrders) {
  std::size_t const n = 64;
  auto o = small_options(8, 2);
  o.shuffle = true;
  o.seed = 1;
  auto data = std::make_shared<echo_dataset>(n);
  loader a{data, o};
  o.seed = 2;
  loader b{data, o};
  EXPECT_NE(flatten(drain_epoch(a)), flatten(drain_epoch(b)));
}

TEST(loader_test, UnshuffledIsIdentityOrder) {
  std::size_t const n = 30;
  auto data = std::make_shared<echo_dataset>(n);
  auto o = small_options(4, 3);
  o.shuffle = false;
  o.seed = 99;
  loader l{data, o};
  EXPECT_EQ(flatten(drain_epoch(l)), iota_vector(n));
  EXPECT_EQ(flatten(drain_epoch(l)), iota_vector(n));
}

TEST(loader_test, ReadSeedDependsOnEpochAndIndexOnly) {
  // ctx.seed is a function of (loader seed, epoch, index): never of the worker.
  std::size_t const n = 40;
  auto seeds_with = [&](unsigned workers, std::uint64_t seed) {
    auto data = std::make_shared<echo_dataset>(n);
    auto o = small_options(4, workers);
    o.shuffle = true;
    o.seed = seed;
    loader l{data, o};
    std::map<std::pair<std::uint64_t, std::size_t>, std::int64_t> seeds;
    for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
      while (auto b = l.next()) {
        auto context = b->field("context").as<std::int64_t>();
        for (std::size_t i = 0; i < b->size(); ++i) {
          seeds[{b->epoch(), b->indices()[i]}] = context[3 * i + 2];
        }
      }
    }
    return seeds;
  };
  auto one = seeds_with(1, 17);
  auto four = seeds_with(4, 17);
  auto other = seeds_with(4, 18);
  ASSERT_EQ(one.size(), 2 * n);
  EXPECT_EQ(one, four);
  std::size_t same_across_epochs = 0;
  std::size_t same_across_seeds = 0;
  std::set<std::int64_t> distinct;
  for (std::size_t i = 0; i < n; ++i) {
    same_across_epochs += one[{0, i}] == one[{1, i}] ? 1U : 0U;
    same_across_seeds += one[{0, i}] == other[{0, i}] ? 1U : 0U;
    distinct.insert(one[{0, i}]);
  }
  EXPECT_EQ(same_across_epochs, 0U);
  EXPECT_EQ(same_across_seeds, 0U);
  EXPECT_EQ(distinct.size(), n) << "samples share read seeds";
}

// ------------------------------------------------------------------------------------------------
// Ranks.

TEST(loader_test, RankShardsAreDisjointAndComplete) {
  std::size_t const n = 37;
  for (unsigned world = 1; world <= 8; ++world) {
    SCOPED_TRACE(::testing::Message() << "world_size=" << world);
    auto data = std::make_shared<echo_dataset>(n);
    auto whole = gpufeed::sampler{n, true, 6}.epoch_indices(0);
    std::vector<std::size_t> all;
    for (unsigned rank = 0; rank < world; ++rank) {
      auto o = small_options(3, 2);
      o.shuffle = true;
      o.seed = 6;
      o.rank = rank;
      o.world_size = world;
      loader l{data, o};
      auto shard = flatten(drain_epoch(l));
      EXPECT_EQ(shard, reference_shard(whole, rank, world)) << "rank " << rank;
      EXPECT_EQ(l.samples_per_epoch(), shard.size());
      all.insert(all.end(), shard.begin(), shard.end());
    }
    EXPECT_EQ(sorted(all), iota_vector(n));
  }
}

// ------------------------------------------------------------------------------------------------
// Gradient accumulation.

TEST(loader_test, AccumulationStepsMatchReference) {
  std::vector<std::size_t> const sizes =
      sanitized ? std::vector<std::size_t>{1, 7, 17} : std::vector<std::size_t>{1, 7, 16, 17, 23};
  for (std::size_t n : sizes) {
    for (std::size_t bs : {1U, 3U, 4U, 8U}) {
      for (std::size_t k : {1U, 2U, 3U, 5U}) {
        for (auto lb : {tail_policy::keep, tail_policy::drop}) {
          for (auto ls : {tail_policy::keep, tail_policy::drop}) {
            SCOPED_TRACE(::testing::Message()
                         << "n=" << n << " batch_size=" << bs << " K=" << k
                         << " last_batch=" << name(lb) << " last_step=" << name(ls));
            auto data = std::make_shared<echo_dataset>(n);
            auto o = small_options(bs, 2);
            o.prefetch_depth = 3;
            o.accumulation_steps = k;
            o.last_batch = lb;
            o.last_step = ls;
            o.shuffle = true;
            o.seed = n * 100 + bs;
            loader l{data, o};
            auto ref = reference_plan(n, bs, k, lb, ls);
            std::size_t ref_samples = 0;
            for (auto const& r : ref) ref_samples += r.count;
            ASSERT_EQ(l.batches_per_epoch(), ref.size());
            ASSERT_EQ(l.steps_per_epoch(), ref.empty() ? 0 : ref.back().step.step + 1);
            ASSERT_EQ(l.samples_per_epoch(), ref_samples);
            for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
              auto records = drain_epoch(l);
              ASSERT_EQ(records.size(), ref.size()) << "epoch " << epoch;
              EXPECT_EQ(l.epoch(), epoch + 1);
              std::map<std::size_t, std::size_t> samples_per_step;
              for (auto const& r : records) samples_per_step[r.step.step] += r.indices.size();
              for (std::size_t s = 0; s < records.size(); ++s) {
                auto const& got = records[s].step;
                auto const& want = ref[s].step;
                EXPECT_EQ(records[s].epoch, epoch);
                EXPECT_EQ(records[s].indices.size(), ref[s].count) << "batch " << s;
                EXPECT_EQ(got.step, want.step) << "batch " << s;
                EXPECT_EQ(got.micro, want.micro) << "batch " << s;
                EXPECT_EQ(got.micros_in_step, want.micros_in_step) << "batch " << s;
                EXPECT_EQ(got.samples_in_step, want.samples_in_step) << "batch " << s;
                EXPECT_EQ(got.samples_in_step, samples_per_step[got.step]) << "batch " << s;
                EXPECT_EQ(got.last_micro, want.last_micro) << "batch " << s;
                EXPECT_EQ(got.short_step, want.short_step) << "batch " << s;
              }
              // A step never straddles the epoch: it starts at micro 0, ends on a last micro.
              if (!records.empty()) {
                EXPECT_EQ(records.front().step.step, 0U);
                EXPECT_EQ(records.front().step.micro, 0U);
                EXPECT_TRUE(records.back().step.last_micro);
              }
            }
          }
        }
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Resume.

TEST(loader_test, ResumeContinuesExactly) {
  std::size_t const n = 50;
  auto data = std::make_shared<echo_dataset>(n, 2);
  auto o = small_options(4, 3);
  o.shuffle = true;
  o.seed = 11;
  o.accumulation_steps = 2;
  std::vector<batch_record> ref0;
  std::vector<batch_record> ref1;
  {
    loader l{data, o};
    ref0 = drain_epoch(l, 2);
    ref1 = drain_epoch(l, 2);
  }
  ASSERT_EQ(ref0.size(), 13U);
  for (std::size_t k : {0U, 1U, 5U, 6U, 12U, 13U}) {  // 13: all consumed, before the end
    SCOPED_TRACE(::testing::Message() << "resume after " << k << " batches");
    gpufeed::loader_state state;
    {
      loader a{data, o};
      for (std::size_t i = 0; i < k; ++i) {
        auto b = a.next();
        ASSERT_TRUE(b.has_value());
        EXPECT_EQ(record_of(*b), ref0[i]);
      }
      state = a.state();
    }  // the first loader is gone before the second starts
    EXPECT_EQ(state.epoch, 0U);
    EXPECT_EQ(state.next_sequence, k);
    EXPECT_EQ(state.seed, 11U);
    EXPECT_EQ(state.dataset_size, n);
    EXPECT_EQ(state.batch_size, 4U);
    EXPECT_TRUE(state.shuffle);
    auto text = state.to_string();
    auto parsed = gpufeed::loader_state::parse(text);
    EXPECT_EQ(parsed, state) << text;

    auto o2 = o;
    o2.workers = 5;
    o2.prefetch_depth = 2;
    loader b{data, o2};
    b.restore(parsed);
    EXPECT_EQ(b.epoch(), 0U);
    EXPECT_EQ(b.state(), state);
    auto rest = drain_epoch(b, 2);
    EXPECT_EQ(rest,
              std::vector<batch_record>(ref0.begin() + static_cast<std::ptrdiff_t>(k), ref0.end()));
    EXPECT_EQ(drain_epoch(b, 2), ref1);
  }
}

TEST(loader_test, ResumeAtEpochBoundary) {
  std::size_t const n = 21;
  auto data = std::make_shared<echo_dataset>(n);
  auto o = small_options(4, 2);
  o.shuffle = true;
  o.seed = 4;
  gpufeed::loader_state state;
  std::vector<batch_record> ref1;
  std::vector<batch_record> ref2;
  {
    loader a{data, o};
    (void)drain_epoch(a);
    state = a.state();
    ref1 = drain_epoch(a);
    ref2 = drain_epoch(a);
  }
  EXPECT_EQ(state.epoch, 1U);
  EXPECT_EQ(state.next_sequence, 0U);
  auto o2 = o;
  o2.workers = 4;
  loader b{data, o2};
  b.restore(gpufeed::loader_state::parse(state.to_string()));
  EXPECT_EQ(b.epoch(), 1U);
  EXPECT_EQ(drain_epoch(b), ref1);
  EXPECT_EQ(drain_epoch(b), ref2);
}

TEST(loader_test, RestoreAfterConsumingGoesBack) {
  // restore() also rewinds a loader that has moved on (prefetched work is discarded).
  std::size_t const n = 40;
  auto data = std::make_shared<echo_dataset>(n);
  auto o = small_options(4, 3);
  o.shuffle = true;
  o.seed = 21;
  loader l{data, o};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(l.next().has_value());
  auto state = l.state();
  auto ahead = drain_epoch(l);
  ASSERT_EQ(ahead.size(), 7U);
  l.restore(state);
  EXPECT_EQ(drain_epoch(l), ahead);
}

TEST(loader_test, RestoreRejectsMismatchedState) {
  auto o = small_options(4, 2);
  o.shuffle = true;
  o.seed = 3;
  auto data = std::make_shared<echo_dataset>(40);
  loader source{data, o};
  (void)source.next();
  auto const state = source.state();

  {  // another dataset size
    loader l{std::make_shared<echo_dataset>(41), o};
    EXPECT_THROW(l.restore(state), gpufeed::logic_error);
  }
  {  // another batch size
    auto o2 = o;
    o2.batch_size = 5;
    loader l{data, o2};
    EXPECT_THROW(l.restore(state), gpufeed::logic_error);
  }
  {  // another world size
    auto o2 = o;
    o2.world_size = 2;
    loader l{data, o2};
    EXPECT_THROW(l.restore(state), gpufeed::logic_error);
  }
  {  // another rank
    auto o2 = o;
    o2.world_size = 2;
    o2.rank = 1;
    auto s2 = state;
    s2.world_size = 2;
    s2.rank = 0;
    loader l{data, o2};
    EXPECT_THROW(l.restore(s2), gpufeed::logic_error);
  }
  {  // shuffle switched off
    auto o2 = o;
    o2.shuffle = false;
    loader l{data, o2};
    EXPECT_THROW(l.restore(state), gpufeed::logic_error);
  }
  {  // past the end of the epoch
    loader l{data, o};
    auto s2 = state;
    s2.next_sequence = l.batches_per_epoch() + 1;
    EXPECT_THROW(l.restore(s2), gpufeed::logic_error);
    // The rejected restore left the loader usable, at the start of epoch 0.
    auto records = drain_epoch(l);
    EXPECT_EQ(index_lists(records), expected_batches(40, o, 0));
  }
  {  // the matching loader accepts it
    loader l{data, o};
    EXPECT_NO_THROW(l.restore(state));
    EXPECT_EQ(l.state(), state);
  }
}

TEST(loader_test, StateParseRejectsGarbage) {
  gpufeed::loader_state s;
  s.seed = 0xfeedfacecafebeefULL;
  s.epoch = 12;
  s.next_sequence = 345;
  s.dataset_size = 1'000'000'000'000ULL;
  s.batch_size = 256;
  s.rank = 3;
  s.world_size = 8;
  s.shuffle = true;
  EXPECT_EQ(gpufeed::loader_state::parse(s.to_string()), s);
  EXPECT_EQ(s.to_string().find('\n'), std::string::npos) << "not one line";
  EXPECT_THROW((void)gpufeed::loader_state::parse(""), gpufeed::logic_error);
  EXPECT_THROW((void)gpufeed::loader_state::parse("hello"), gpufeed::logic_error);
  auto text = s.to_string();
  EXPECT_THROW((void)gpufeed::loader_state::parse(text.substr(0, text.size() / 2)),
               gpufeed::logic_error);
}

TEST(loader_test, StateParseRejectsAnythingButItsOwnForm) {
  gpufeed::loader_state s;
  s.seed = 5;
  s.epoch = 2;
  s.next_sequence = 3;
  s.dataset_size = 100;
  s.batch_size = 8;
  s.rank = 1;
  s.world_size = 4;
  s.shuffle = true;
  auto const text = s.to_string();
  auto replace = [&](std::string const& from, std::string const& to) {
    auto out = text;
    auto at = out.find(from);
    EXPECT_NE(at, std::string::npos) << "'" << text << "' has no '" << from << "'";
    if (at != std::string::npos) out.replace(at, from.size(), to);
    return out;
  };
  // A repeated key standing in for a missing one.
  auto const duplicated = replace("epoch=2", "seed=5");
  EXPECT_THROW((void)gpufeed::loader_state::parse(duplicated), gpufeed::logic_error)
      << "accepted '" << duplicated << "'";
  // A rank or world size that does not fit its type must not wrap around.
  auto const huge_rank = replace("rank=1", "rank=4294967297");
  EXPECT_THROW((void)gpufeed::loader_state::parse(huge_rank), gpufeed::logic_error)
      << "accepted '" << huge_rank << "'";
  auto const huge_world = replace("world_size=4", "world_size=4294967300");
  EXPECT_THROW((void)gpufeed::loader_state::parse(huge_world), gpufeed::logic_error)
      << "accepted '" << huge_world << "'";
  // Numbers only.
  EXPECT_THROW((void)gpufeed::loader_state::parse(replace("epoch=2", "epoch=two")),
               gpufeed::logic_error);
  EXPECT_THROW((void)gpufeed::loader_state::parse(replace("epoch=2", "epoch=-2")),
               gpufeed::logic_error);
}

// ------------------------------------------------------------------------------------------------
// set_epoch.

TEST(loader_test, SetEpochCurrentKeepsPrefetchedBatches) {
  std::size_t const n = 24;
  auto data = std::make_shared<echo_dataset>(n);
  auto o = small_options(4, 2);
  o.prefetch_depth = 3;
  o.shuffle = true;
  o.seed = 12;
  loader l{data, o};
  // Let the ring fill with epoch 0, then say "epoch 0" again: nothing is re-read.
  ASSERT_TRUE(wait_ready(l, 3)) << "the ring never filled";
  // Three full slots of 4 and no consumer: exactly 12 samples read, and no slot free for more.
  auto const read_before = l.snapshot().samples_read;
  EXPECT_EQ(read_before, 12U);
  l.set_epoch(0);
  EXPECT_EQ(l.epoch(), 0U);
  EXPECT_EQ(l.snapshot().samples_read, read_before);
  auto e0 = drain_epoch(l);
  EXPECT_EQ(index_lists(e0), expected_batches(n, o, 0));
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(data->reads(0, i), 1U) << "index " << i;

  // The same at the boundary: after the end, the loader stands at epoch 1 and prefetches it.
  ASSERT_EQ(l.epoch(), 1U);
  ASSERT_TRUE(wait_ready(l, 3));
  l.set_epoch(1);
  auto e1 = drain_epoch(l);
  EXPECT_EQ(index_lists(e1), expected_batches(n, o, 1));
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(data->reads(1, i), 1U) << "index " << i;
}

TEST(loader_test, SetEpochNextAfterLastBatchKeepsPrefetchedBatches) {
  // Training loops that count batches never see next()'s nullopt: they take exactly
  // batches_per_epoch() batches, then call set_epoch(e + 1). The prefetched batches of e + 1
  // must be kept (each sample read once) and the new epoch must not come out empty.
  std::size_t const n = 24;
  auto data = std::make_shared<echo_dataset>(n);
  auto o = small_options(4, 2);
  o.prefetch_depth = 3;
  o.shuffle = true;
  o.seed = 21;
  loader l{data, o};
  for (std::size_t b = 0; b < l.batches_per_epoch(); ++b) {
    ASSERT_TRUE(l.next().has_value()) << "batch " << b;
  }
  ASSERT_TRUE(wait_ready(l, 3)) << "epoch 1 was not prefetched";
  l.set_epoch(1);
  EXPECT_EQ(l.epoch(), 1U);
  auto e1 = drain_epoch(l);
  EXPECT_EQ(index_lists(e1), expected_batches(n, o, 1));
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(data->reads(1, i), 1U) << "index " << i;
}

TEST(loader_test, SetEpochOtherRestartsAtBatchZero) {
  std::size_t const n = 40;
  auto data = std::make_shared<echo_dataset>(n, 3);
  auto o = small_options(4, 3);
  o.shuffle = true;
  o.seed = 13;
  loader l{data, o};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(l.next().has_value());
  l.set_epoch(5);
  EXPECT_EQ(l.epoch(), 5U);
  auto e5 = drain_epoch(l, 3);
  ASSERT_FALSE(e5.empty());
  EXPECT_EQ(e5.front().sequence, 0U);
  for (auto const& r : e5) EXPECT_EQ(r.epoch, 5U);
  EXPECT_EQ(index_lists(e5), expected_batches(n, o, 5));
  EXPECT_EQ(l.epoch(), 6U);

  // Mid-epoch to an earlier epoch, too.
  ASSERT_TRUE(l.next().has_value());
  l.set_epoch(2);
  EXPECT_EQ(index_lists(drain_epoch(l, 3)), expected_batches(n, o, 2));
  EXPECT_EQ(l.epoch(), 3U);
}

TEST(loader_test, PrefetchCrossesEpochBoundary) {
  std::size_t const n = 18;
  auto data = std::make_shared<echo_dataset>(n);
  auto o = small_options(4, 2);
  o.shuffle = true;
  o.seed = 14;
  loader l{data, o};
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    EXPECT_EQ(l.epoch(), epoch);
    std::vector<std::vector<std::size_t>> got;
    std::uint64_t sequence = 0;
    for (auto& b : l) {  // range-for: one epoch
      EXPECT_EQ(b.epoch(), epoch);
      EXPECT_EQ(b.sequence(), sequence++);
      EXPECT_TRUE(echo_content_matches(b, 0));
      got.emplace_back(b.indices().begin(), b.indices().end());
    }
    EXPECT_EQ(got, expected_batches(n, o, epoch));
    EXPECT_EQ(l.epoch(), epoch + 1);
  }
  // A loader that is told the epoch explicitly each time gives the same.
  loader m{data, o};
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    m.set_epoch(epoch);
    EXPECT_EQ(index_lists(drain_epoch(m)), expected_batches(n, o, epoch));
  }
}

TEST(loader_test, EpochWithoutBatches) {
  // Fewer samples than one batch and the tail dropped, or no samples at all: every epoch is
  // empty, next() says so at once, and the epochs still advance.
  for (std::size_t n : {0U, 3U}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    auto data = std::make_shared<echo_dataset>(n);
    auto o = small_options(4, 2);
    o.last_batch = tail_policy::drop;
    loader l{data, o};
    EXPECT_EQ(l.batches_per_epoch(), 0U);
    EXPECT_EQ(l.steps_per_epoch(), 0U);
    EXPECT_EQ(l.samples_per_epoch(), 0U);
    for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
      EXPECT_EQ(l.epoch(), epoch);
      EXPECT_FALSE(l.next().has_value());
    }
    EXPECT_EQ(l.snapshot().batches, 0U);
  }
}

// ------------------------------------------------------------------------------------------------
// Batches and fields.

TEST(loader_test, FieldsHaveBatchShape) {
  std::size_t const n = 10;
  auto data = std::make_shared<echo_dataset>(n, 6);
  auto o = small_options(4, 2);
  loader l{data, o};
  std::vector<std::size_t> sizes;
  while (auto b = l.next()) {
    ASSERT_EQ(b->fields(), 3U);
    auto index = b->field(0);
    auto context = b->field(1);
    auto payload = b->field("payload");
    EXPECT_EQ(index.name(), "index");
    EXPECT_EQ(index.type(), gpufeed::dtype::i64);
    ASSERT_EQ(index.rank(), 1U);
    EXPECT_EQ(index.shape()[0], static_cast<std::int64_t>(b->size()));
    ASSERT_EQ(context.rank(), 2U);
    EXPECT_EQ(context.shape()[0], static_cast<std::int64_t>(b->size()));
    EXPECT_EQ(context.shape()[1], 3);
    ASSERT_EQ(payload.rank(), 2U);
    EXPECT_EQ(payload.shape()[1], 6);
    EXPECT_EQ(payload.type(), gpufeed::dtype::u8);
    EXPECT_EQ(payload.bytes(), b->size() * 6);
    EXPECT_EQ(b->field(2).data(), payload.data());
    EXPECT_THROW((void)b->field("no_such_field"), gpufeed::logic_error);
    EXPECT_THROW((void)index.as<std::int32_t>(), gpufeed::logic_error);
    EXPECT_TRUE(b->skipped().empty());
    sizes.push_back(b->size());
  }
  EXPECT_EQ(sizes, (std::vector<std::size_t>{4, 4, 2}));
}

TEST(loader_test, BatchIsAMoveOnlyLease) {
  auto data = std::make_shared<echo_dataset>(16, 4);
  loader l{data, small_options(4, 2)};
  auto b = l.next();
  ASSERT_TRUE(b.has_value());
  ASSERT_TRUE(static_cast<bool>(*b));
  auto const indices = std::vector<std::size_t>(b->indices().begin(), b->indices().end());
  gpufeed::batch moved{std::move(*b)};
  EXPECT_FALSE(static_cast<bool>(*b));  // NOLINT(bugprone-use-after-move): checks the moved-from
  ASSERT_TRUE(static_cast<bool>(moved));
  EXPECT_EQ(std::vector<std::size_t>(moved.indices().begin(), moved.indices().end()), indices);
  EXPECT_TRUE(echo_content_matches(moved, 4));
  gpufeed::batch assigned;
  EXPECT_FALSE(static_cast<bool>(assigned));
  assigned = std::move(moved);
  EXPECT_TRUE(echo_content_matches(assigned, 4));
  assigned.release();
  EXPECT_FALSE(static_cast<bool>(assigned));
  assigned.release();  // twice is harmless
  // Moving a live lease over another one gives the old slot back.
  auto c = l.next();
  auto d = l.next();
  ASSERT_TRUE(c && d);
  *c = std::move(*d);
  EXPECT_EQ(c->sequence(), 2U);
  EXPECT_TRUE(echo_content_matches(*c, 4));
  EXPECT_EQ(l.snapshot().ring_leased, 1U);
}

TEST(loader_test, LoaderCanBeMovedMidEpoch) {
  std::size_t const n = 32;
  auto data = std::make_shared<echo_dataset>(n);
  auto o = small_options(4, 2);
  o.shuffle = true;
  o.seed = 31;
  loader a{data, o};
  auto first = a.next();
  ASSERT_TRUE(first.has_value());
  loader b{std::move(a)};
  auto rest = drain_epoch(b);
  auto want = expected_batches(n, o, 0);
  ASSERT_EQ(rest.size() + 1, want.size());
  EXPECT_EQ(std::vector<std::size_t>(first->indices().begin(), first->indices().end()), want[0]);
  for (std::size_t s = 0; s < rest.size(); ++s) EXPECT_EQ(rest[s].indices, want[s + 1]);
  loader c{data, o};
  c = std::move(b);
  EXPECT_EQ(c.epoch(), 1U);
  EXPECT_EQ(index_lists(drain_epoch(c)), expected_batches(n, o, 1));
}

TEST(loader_test, AMovedFromLoaderSaysSoOnUse) {
  // It once dereferenced a null core (a crash); now every call says what happened.
  auto data = std::make_shared<echo_dataset>(16);
  loader a{data, small_options(4, 2)};
  loader b{std::move(a)};
  auto const says_moved = [](auto&& call) {
    try {
      call();
    } catch (gpufeed::logic_error const& e) {
      return std::string{e.what()}.find("moved from") != std::string::npos;
    }
    return false;
  };
  // NOLINTBEGIN(bugprone-use-after-move): the moved-from loader is what is tested
  EXPECT_TRUE(says_moved([&] { (void)a.next(); }));
  EXPECT_TRUE(says_moved([&] { (void)a.try_next_for(std::chrono::milliseconds{1}); }));
  EXPECT_TRUE(says_moved([&] { a.set_epoch(1); }));
  EXPECT_TRUE(says_moved([&] { (void)a.epoch(); }));
  EXPECT_TRUE(says_moved([&] { (void)a.state(); }));
  EXPECT_TRUE(says_moved([&] { a.restore(b.state()); }));
  EXPECT_TRUE(says_moved([&] { (void)a.snapshot(); }));
  EXPECT_TRUE(says_moved([&] { (void)a.batches_per_epoch(); }));
  EXPECT_TRUE(says_moved([&] { (void)a.batch_bytes(); }));
  EXPECT_TRUE(says_moved([&] { (void)a.options(); }));
  EXPECT_TRUE(says_moved([&] { (void)a.begin(); }));
  // NOLINTEND(bugprone-use-after-move)
  // The loader it moved to works, and a moved-from one can be given a new loader.
  EXPECT_EQ(index_lists(drain_epoch(b)), expected_batches(16, small_options(4, 2), 0));
  a = loader{data, small_options(4, 2)};
  EXPECT_EQ(index_lists(drain_epoch(a)), expected_batches(16, small_options(4, 2), 0));
}

// ------------------------------------------------------------------------------------------------
// Sizes a user can give that memory cannot hold.

TEST(loader_test, AHugeBatchSizeIsRefusedBeforeAnythingIsAllocated) {
  // 2^32 samples a batch: its per-sample lists alone are 96 GiB a slot, and were once asked of
  // the allocator (a plain std::bad_alloc, or worse, the OOM killer). Now the ring is sized
  // against the machine's memory first, and the error names the option.
  auto data = std::make_shared<echo_dataset>(100);
  auto o = small_options(std::size_t{1} << 32, 2);
  auto const rss = rss_bytes();
  try {
    loader l{data, o};
    FAIL() << "a batch of 2^32 samples was accepted";
  } catch (gpufeed::out_of_memory const& e) {
    std::string const what = e.what();
    EXPECT_TRUE(contains_token(what, "batch_size")) << what;
    EXPECT_NE(what.find("4294967296"), std::string::npos) << what;
    EXPECT_NE(what.find("physical memory"), std::string::npos) << what;
  }
  EXPECT_LT(rss_bytes(), rss + (std::size_t{256} << 20)) << "memory was touched before refusing";
}

TEST(loader_test, ARingDeeperThanMemoryIsRefusedNamingPrefetchDepth) {
  // One slot fits, 4096 of them do not (64 MiB each, 256 GiB in all).
  if (gpufeed::detail::physical_memory_bytes() >= (std::size_t{256} << 30)) {
    GTEST_SKIP() << "this machine could hold the ring: the test needs one larger than memory";
  }
  auto data = std::make_shared<echo_dataset>(100, 1 << 20);
  auto o = small_options(64, 2);
  o.prefetch_depth = 4096;
  try {
    loader l{data, o};
    FAIL() << "a 256 GiB ring was accepted";
  } catch (gpufeed::out_of_memory const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("loader_options::prefetch_depth = 4096"), std::string::npos) << what;
  }
}

// ------------------------------------------------------------------------------------------------
// Counters.

TEST(loader_test, StatsMatchWhatWasConsumed) {
  std::size_t const n = 45;
  std::size_t const payload = 16;
  auto data = std::make_shared<echo_dataset>(n, payload);
  auto o = small_options(4, 3);
  o.prefetch_depth = 3;
  loader l{data, o};
  auto const bytes_per_sample = data->spec().bytes_per_sample();
  std::uint64_t batches = 0;
  std::uint64_t samples = 0;
  for (int i = 0; i < 7; ++i) {
    auto b = l.next();
    ASSERT_TRUE(b.has_value());
    ++batches;
    samples += b->size();
  }
  auto s = l.snapshot();
  EXPECT_EQ(s.batches, batches);
  EXPECT_EQ(s.samples, samples);
  EXPECT_EQ(s.bytes, samples * bytes_per_sample);
  EXPECT_GE(s.samples_read, samples);
  EXPECT_LE(s.samples_read, n);  // prefetch never reads past the epoch's plan
  EXPECT_EQ(s.skipped, 0U);
  EXPECT_EQ(s.failed_batches, 0U);
  EXPECT_TRUE(s.skipped_indices.empty());
  EXPECT_EQ(s.ring_slots, 3U);
  EXPECT_EQ(s.workers, 3U);
  EXPECT_LE(s.ring_ready + s.ring_leased, s.ring_slots);
  EXPECT_EQ(l.batch_bytes(), 4 * bytes_per_sample);
  // Each field's region of 4 samples padded to 256 bytes: index 32, context 96, payload 64.
  EXPECT_EQ(s.slot_bytes, 3U * 256U);
  EXPECT_EQ(s.host_bytes, s.ring_slots * s.slot_bytes);
  // Per slot and sample: its index (8 bytes), a failure record (the exception and the worker: 16)
  // and a skip entry (8).
  EXPECT_EQ(s.bookkeeping_bytes, s.ring_slots * 4 * 32);
  EXPECT_EQ(s.pinned_bytes, 0U);  // the host path pins nothing
  EXPECT_EQ(s.staging, "host");
  EXPECT_EQ(s.device, -1);
  EXPECT_GT(s.read_s, 0.0);
  EXPECT_LE(s.read_s, s.wall_s * s.workers + 1e-6);
  EXPECT_LE(s.slot_wait_s, s.wall_s * s.workers + 1e-6);
  EXPECT_LE(s.consumer_wait_s, s.wall_s + 1e-6);
  EXPECT_EQ(s.consumer_wait.count, batches) << "one wait recorded per next() that delivered";
  EXPECT_LE(s.stall_fraction(), 1.0 + 1e-9);
  // Each next() counts the slots ready as it takes its batch, that batch included.
  EXPECT_GE(s.ring_ready_mean, 1.0);
  EXPECT_LE(s.ring_ready_mean, 3.0);
  EXPECT_EQ(s.to_string().rfind("7 batches, 28 samples in ", 0), 0U) << s.to_string();

  // Through the end of the epoch and one more: totals add up.
  while (auto b = l.next()) {
    ++batches;
    samples += b->size();
  }
  auto t = l.snapshot();
  EXPECT_EQ(samples, n);
  EXPECT_EQ(t.batches, batches);
  EXPECT_EQ(t.samples, n);
  EXPECT_EQ(t.bytes, n * bytes_per_sample);
  EXPECT_GE(t.samples_read, n);
  EXPECT_GE(t.wall_s, s.wall_s);
  EXPECT_GE(t.read_s, s.read_s);
  EXPECT_LE(t.read_s, t.wall_s * t.workers + 1e-6);
  EXPECT_LE(t.consumer_wait_s, t.wall_s + 1e-6);
}

TEST(loader_test, RingLeasedCountsLiveBatches) {
  auto data = std::make_shared<echo_dataset>(40);
  auto o = small_options(4, 2);
  o.prefetch_depth = 4;
  loader l{data, o};
  EXPECT_EQ(l.snapshot().ring_leased, 0U);
  auto a = l.next();
  auto b = l.next();
  EXPECT_EQ(l.snapshot().ring_leased, 2U);
  a->release();
  EXPECT_EQ(l.snapshot().ring_leased, 1U);
  b.reset();
  EXPECT_EQ(l.snapshot().ring_leased, 0U);
}

TEST(loader_test, SnapshotFromAnotherThread) {
  std::size_t const n = 200;
  auto data = std::make_shared<echo_dataset>(n);
  auto o = small_options(2, 3);
  loader l{data, o};
  std::atomic<bool> done{false};
  std::atomic<std::size_t> polls{0};
  std::thread watcher{[&] {
    std::uint64_t last = 0;
    while (!done.load()) {
      auto s = l.snapshot();
      EXPECT_GE(s.batches, last) << "delivered batches went backwards";
      last = s.batches;
      (void)l.batches_per_epoch();
      (void)l.epoch();
      polls.fetch_add(1);
      std::this_thread::yield();
    }
  }};
  // Overlap for sure: the watcher polls before, during and after the epoch.
  ASSERT_TRUE(eventually([&] { return polls.load() > 0; }));
  auto records = drain_epoch(l);
  auto const polled = polls.load();
  EXPECT_TRUE(eventually([&] { return polls.load() > polled; }));
  done.store(true);
  watcher.join();
  EXPECT_EQ(records.size(), n / 2);
  EXPECT_EQ(l.snapshot().batches, n / 2);
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Chunk-aware shuffle through the loader.

namespace {
// An index-echo dataset that reports storage chunks, as a chunked HDF5 file does.
class chunked_echo final : public gpufeed::dataset {
 public:
  chunked_echo(std::size_t n, std::size_t chunk) : n_{n}, chunk_{chunk} {}
  std::size_t size() const override { return n_; }
  gpufeed::sample_spec spec() const override {
    return gpufeed::sample_spec{}.add("index", gpufeed::dtype::i64, {});
  }
  void read(std::size_t index, gpufeed::sample_view out,
            gpufeed::read_context const&) const override {
    out.as<std::int64_t>(0)[0] = static_cast<std::int64_t>(index);
  }
  std::size_t storage_chunk() const override { return chunk_; }

 private:
  std::size_t n_, chunk_;
};
}  // namespace

TEST(loader_test, ChunkAwareShuffleFollowsTheSamplerAndResumes) {
  auto data = std::make_shared<chunked_echo>(150, 16);
  auto o = small_options(8, 3);
  o.shuffle = true;
  o.seed = 77;
  o.chunk_window = 2;
  gpufeed::sampler const reference{150, true, 77, 0, 1, {16, 2}};
  loader l{data, o};
  std::vector<std::size_t> seen;
  for (auto& b : l) {
    auto const values = b.field("index").as<std::int64_t>();
    for (std::size_t k = 0; k < b.size(); ++k) {
      ASSERT_EQ(static_cast<std::size_t>(values[k]), b.indices()[k]);
      seen.push_back(b.indices()[k]);
    }
  }
  EXPECT_EQ(seen, reference.epoch_indices(0));

  // The state names the window, and a loader with another window refuses it.
  auto const state = l.state();
  EXPECT_EQ(state.chunk_window, 2U);
  EXPECT_EQ(gpufeed::loader_state::parse(state.to_string()), state);
  auto other = o;
  other.chunk_window = 3;
  loader different{data, other};
  EXPECT_THROW(different.restore(state), gpufeed::logic_error);
}

TEST(loader_test, StateWithoutChunkWindowStillParses) {
  auto const parsed = gpufeed::loader_state::parse(
      "gpufeed-state/1 seed=5 epoch=2 next_sequence=3 dataset_size=100 batch_size=8 rank=1 "
      "world_size=4 shuffle=1");
  EXPECT_EQ(parsed.chunk_window, 0U);
  EXPECT_EQ(parsed.epoch, 2U);
}
