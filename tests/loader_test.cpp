// The loader's delivery contract: every sample once per epoch, in plan order, the same order for
// any worker count, rank shards and accumulation steps.

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

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

TEST(loader_test, RankShardsAreDisjointCompleteAndEqual) {
  std::size_t const n = 37;
  for (unsigned world = 1; world <= 8; ++world) {
    for (bool drop_last : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "world_size=" << world << " drop_last=" << drop_last);
      auto data = std::make_shared<echo_dataset>(n);
      auto whole = gpufeed::sampler{n, true, 6}.epoch_indices(0);
      std::set<std::size_t> all;
      std::set<std::size_t> batch_counts;
      for (unsigned rank = 0; rank < world; ++rank) {
        auto o = small_options(3, 2);
        o.shuffle = true;
        o.seed = 6;
        o.rank = rank;
        o.world_size = world;
        o.last_batch = drop_last ? gpufeed::tail_policy::drop : gpufeed::tail_policy::keep;
        loader l{data, o};
        auto const batches = drain_epoch(l);
        auto shard = flatten(batches);
        // Every rank has as many batches: a rank with one fewer would hang a collective.
        batch_counts.insert(batches.size());
        EXPECT_EQ(l.batches_per_epoch(), batches.size());
        EXPECT_EQ(l.samples_per_epoch(), shard.size());
        auto const evening = drop_last ? gpufeed::even_shards::trim : gpufeed::even_shards::pad;
        auto expected = reference_shard(whole, rank, world, evening);
        if (drop_last) expected.resize(expected.size() / 3 * 3);
        EXPECT_EQ(shard, expected) << "rank " << rank;
        std::set<std::size_t> const mine(shard.begin(), shard.end());
        for (auto i : mine) EXPECT_TRUE(all.insert(i).second) << "sample " << i << " twice";
      }
      EXPECT_EQ(batch_counts.size(), 1U);
      if (!drop_last) {
        EXPECT_EQ(all.size(), n);
      }
    }
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

}  // namespace
