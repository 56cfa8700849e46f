// The sampler: the epoch order is a pure function of (seed, epoch, rank, world_size).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <set>
#include <vector>

#include "gpufeed/error.hpp"
#include "gpufeed/sampler.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::sampler;

std::vector<std::size_t> iota_vector(std::size_t n) {
  std::vector<std::size_t> v(n);
  std::iota(v.begin(), v.end(), std::size_t{0});
  return v;
}

std::vector<std::size_t> sorted(std::vector<std::size_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Sizes around the Feistel domain's powers of two (cycle walking) and a few odd ones.
std::vector<std::size_t> const kSizes = {1,  2,  3,  4,  5,   7,   8,   15,  16,   17,   31,
                                         33, 63, 64, 65, 100, 255, 256, 257, 1000, 1023, 4097};

TEST(sampler_test, ShuffledEpochIsAPermutation) {
  for (auto n : kSizes) {
    for (std::uint64_t epoch : {0U, 1U, 7U}) {
      sampler s{n, true, 1234};
      auto order = s.epoch_indices(epoch);
      ASSERT_EQ(order.size(), n) << "n=" << n;
      EXPECT_EQ(sorted(order), iota_vector(n)) << "n=" << n << " epoch=" << epoch;
    }
  }
}

TEST(sampler_test, UnshuffledIsIdentity) {
  for (auto n : kSizes) {
    sampler s{n, false, 99};
    EXPECT_FALSE(s.shuffled());
    EXPECT_EQ(s.epoch_indices(0), iota_vector(n)) << "n=" << n;
    EXPECT_EQ(s.epoch_indices(5), iota_vector(n)) << "n=" << n;
  }
}

TEST(sampler_test, IndexAgreesWithEpochIndices) {
  for (auto n : kSizes) {
    for (unsigned world : {1U, 3U}) {
      for (unsigned rank = 0; rank < world; ++rank) {
        sampler s{n, true, 77, rank, world};
        for (std::uint64_t epoch : {0U, 3U}) {
          auto order = s.epoch_indices(epoch);
          ASSERT_EQ(order.size(), s.shard_size());
          for (std::size_t p = 0; p < order.size(); ++p) {
            ASSERT_EQ(s.index(epoch, p), order[p]) << "n=" << n << " rank=" << rank << "/" << world
                                                   << " epoch=" << epoch << " position=" << p;
          }
        }
      }
    }
  }
}

TEST(sampler_test, SameSeedSameOrder) {
  sampler a{1000, true, 42};
  sampler b{1000, true, 42};
  for (std::uint64_t epoch = 0; epoch < 4; ++epoch) {
    EXPECT_EQ(a.epoch_indices(epoch), b.epoch_indices(epoch)) << "epoch " << epoch;
  }
  // Asking again, or asking position by position in another order, changes nothing.
  auto first = a.epoch_indices(2);
  EXPECT_EQ(a.epoch_indices(2), first);
  for (std::size_t p = 1000; p-- > 0;) ASSERT_EQ(b.index(2, p), first[p]);
}

TEST(sampler_test, EpochsAndSeedsGiveDifferentOrders) {
  sampler s{1000, true, 42};
  auto e0 = s.epoch_indices(0);
  auto e1 = s.epoch_indices(1);
  auto e2 = s.epoch_indices(2);
  EXPECT_NE(e0, e1);
  EXPECT_NE(e1, e2);
  EXPECT_NE(e0, e2);
  sampler other{1000, true, 43};
  EXPECT_NE(other.epoch_indices(0), e0);
  // A shuffle, not a near-identity: few fixed points, and not the identity either way round.
  std::size_t fixed = 0;
  for (std::size_t p = 0; p < e0.size(); ++p) fixed += e0[p] == p ? 1U : 0U;
  EXPECT_LT(fixed, 50U) << "a shuffled order of 1000 kept " << fixed << " samples in place";
  auto reversed = iota_vector(1000);
  std::reverse(reversed.begin(), reversed.end());
  EXPECT_NE(e0, iota_vector(1000));
  EXPECT_NE(e0, reversed);
}

TEST(sampler_test, SmallDatasetsAreShuffledToo) {
  // Over many seeds, a 5-sample dataset must not always come out in the same order.
  std::set<std::vector<std::size_t>> seen;
  for (std::uint64_t seed = 0; seed < 64; ++seed)
    seen.insert(sampler{5, true, seed}.epoch_indices(0));
  EXPECT_GT(seen.size(), 10U);
}

TEST(sampler_test, EveryRankReadsAsManyPositions) {
  for (std::size_t n : {0U, 1U, 2U, 5U, 7U, 8U, 9U, 37U, 64U, 100U}) {
    for (unsigned world = 1; world <= 8; ++world) {
      std::size_t own = 0;
      for (unsigned rank = 0; rank < world; ++rank) {
        sampler padded{n, true, 5, rank, world, {}, gpufeed::even_shards::pad};
        sampler trimmed{n, true, 5, rank, world, {}, gpufeed::even_shards::trim};
        std::size_t const want = n > rank ? (n - rank + world - 1) / world : 0;
        EXPECT_EQ(padded.own_samples(), want) << "n=" << n << " rank=" << rank << "/" << world;
        EXPECT_EQ(padded.shard_size(), (n + world - 1) / world) << "n=" << n << " w=" << world;
        EXPECT_EQ(trimmed.shard_size(), n / world) << "n=" << n << " world=" << world;
        EXPECT_EQ(padded.repeated(), padded.shard_size() - want);
        EXPECT_EQ(trimmed.repeated(), 0U);
        EXPECT_EQ(padded.rank(), rank);
        EXPECT_EQ(padded.world_size(), world);
        EXPECT_EQ(padded.dataset_size(), n);
        own += padded.own_samples();
      }
      EXPECT_EQ(own, n) << "n=" << n << " world=" << world;
    }
  }
}

TEST(sampler_test, RankShardsAreDisjointAndComplete) {
  for (std::size_t n : {1U, 5U, 37U, 100U, 257U}) {
    for (unsigned world = 1; world <= 8; ++world) {
      for (bool shuffle : {false, true}) {
        for (auto evening : {gpufeed::even_shards::pad, gpufeed::even_shards::trim}) {
          for (std::uint64_t epoch : {0U, 4U}) {
            std::set<std::size_t> all;
            std::size_t read = 0;
            auto whole = sampler{n, shuffle, 9}.epoch_indices(epoch);
            for (unsigned rank = 0; rank < world; ++rank) {
              sampler s{n, shuffle, 9, rank, world, {}, evening};
              auto shard = s.epoch_indices(epoch);
              // Rank r takes positions r, r + W, ... of the whole epoch's order, evened out.
              EXPECT_EQ(shard, gpufeed::test::reference_shard(whole, rank, world, evening))
                  << "n=" << n << " rank=" << rank << "/" << world << " shuffle=" << shuffle;
              std::set<std::size_t> const mine(shard.begin(), shard.end());
              for (auto i : mine) {
                // Disjoint: a sample is one rank's (a rank without samples of its own, when
                // there are fewer samples than ranks, reads one of another's).
                EXPECT_TRUE(all.insert(i).second || n < world) << "sample " << i << " twice";
              }
              read += shard.size();
            }
            EXPECT_EQ(read, world * (evening == gpufeed::even_shards::pad ? (n + world - 1) / world
                                                                          : n / world));
            if (evening == gpufeed::even_shards::pad) {  // together they cover the epoch
              EXPECT_EQ(all.size(), n) << "n=" << n << " world=" << world;
            } else {  // the n % W left out are the last of the epoch's order
              std::set<std::size_t> const kept(whole.begin(),
                                               whole.end() - static_cast<long>(n % world));
              EXPECT_EQ(all, kept) << "n=" << n << " world=" << world;
            }
          }
        }
      }
    }
  }
}

TEST(sampler_test, RejectsBadRankLayout) {
  EXPECT_THROW((sampler{10, true, 0, 0, 0}), gpufeed::logic_error);
  EXPECT_THROW((sampler{10, true, 0, 2, 2}), gpufeed::logic_error);
  EXPECT_THROW((sampler{10, false, 0, 9, 4}), gpufeed::logic_error);
  EXPECT_NO_THROW((sampler{10, false, 0, 3, 4}));
}

TEST(sampler_test, MixSeedIsSensitiveToEachInput) {
  std::set<std::uint64_t> values;
  for (std::uint64_t a = 0; a < 4; ++a) {
    for (std::uint64_t b = 0; b < 4; ++b) {
      for (std::uint64_t c = 0; c < 4; ++c) values.insert(gpufeed::mix_seed(a, b, c));
    }
  }
  EXPECT_EQ(values.size(), 64U) << "mix_seed collides on small inputs";
  EXPECT_NE(gpufeed::mix_seed(1, 2), gpufeed::mix_seed(2, 1));
}

}  // namespace

// ---- chunk-aware shuffle ---------------------------------------------------------------------

namespace {
struct chunk_case {
  std::size_t n, chunk, window;
};
constexpr chunk_case chunk_cases[] = {{1, 4, 2},   {3, 4, 2},    {16, 4, 2},  {17, 4, 2},
                                      {100, 7, 3}, {100, 10, 1}, {99, 10, 4}, {1000, 16, 4},
                                      {64, 8, 8},  {65, 8, 16}};
}  // namespace

TEST(sampler_test, ChunkAwareEpochIsAPermutation) {
  for (auto const& c : chunk_cases) {
    for (std::uint64_t epoch : {0U, 1U, 7U}) {
      sampler s{c.n, true, 42, 0, 1, {c.chunk, c.window}};
      ASSERT_TRUE(s.chunk_aware());
      EXPECT_EQ(sorted(s.epoch_indices(epoch)), iota_vector(c.n))
          << "n " << c.n << " chunk " << c.chunk << " window " << c.window << " epoch " << epoch;
    }
  }
}

TEST(sampler_test, ChunkAwareRanksDecompressOnlyTheirShare) {
  // With interleaved shards every rank would touch every chunk; contiguous shards touch about
  // 1/world_size of them, plus at most one shared window at each boundary between ranks.
  for (unsigned world : {2U, 3U, 4U}) {
    std::size_t const n = 4000;
    std::size_t const chunk = 16;
    std::size_t const window = 4;
    std::set<std::size_t> all;
    std::size_t touched = 0;
    for (unsigned rank = 0; rank < world; ++rank) {
      sampler s{n, true, 9, rank, world, {chunk, window}};
      std::set<std::size_t> chunks;
      for (auto i : s.epoch_indices(1)) {
        chunks.insert(i / chunk);
        all.insert(i);
      }
      touched += chunks.size();
    }
    EXPECT_EQ(all.size(), n) << "world " << world;  // the ranks still cover the epoch
    EXPECT_LE(touched, n / chunk + 2 * window * (world - 1)) << "world " << world;
  }
}

TEST(sampler_test, ChunkAwareWindowsTouchFewChunks) {
  // Each window of window x chunk positions (the epoch is cut into them) draws from at most
  // `window` chunks, plus the short tail chunk in the last one.
  for (auto const& c : chunk_cases) {
    sampler s{c.n, true, 3, 0, 1, {c.chunk, c.window}};
    auto const order = s.epoch_indices(0);
    auto const run = c.chunk * c.window;
    for (std::size_t first = 0; first < c.n; first += run) {
      std::set<std::size_t> chunks;
      auto const last = std::min(c.n, first + run);
      for (auto p = first; p < last; ++p) chunks.insert(order[p] / c.chunk);
      EXPECT_LE(chunks.size(), c.window + 1) << "n " << c.n << " run at " << first;
    }
  }
}

TEST(sampler_test, ChunkAwareOrderIsShuffledAndDependsOnSeedAndEpoch) {
  sampler a{1000, true, 5, 0, 1, {16, 4}};
  sampler b{1000, true, 6, 0, 1, {16, 4}};
  EXPECT_NE(a.epoch_indices(0), iota_vector(1000));
  EXPECT_NE(a.epoch_indices(0), a.epoch_indices(1));
  EXPECT_NE(a.epoch_indices(0), b.epoch_indices(0));
  EXPECT_EQ(a.epoch_indices(3), (sampler{1000, true, 5, 0, 1, {16, 4}}.epoch_indices(3)));
  // The first run of positions does not always start with chunk 0: the chunks are shuffled.
  std::set<std::size_t> first_chunks;
  for (std::uint64_t epoch = 0; epoch < 8; ++epoch) {
    first_chunks.insert(a.epoch_indices(epoch)[0] / 16);
  }
  EXPECT_GT(first_chunks.size(), 1U);
}

TEST(sampler_test, ChunkAwareRankShardsAreDisjointAndComplete) {
  for (unsigned world = 1; world <= 4; ++world) {
    std::vector<std::size_t> all;
    std::size_t repeated = 0;
    for (unsigned rank = 0; rank < world; ++rank) {
      sampler s{203, true, 8, rank, world, {10, 3}};
      auto part = s.epoch_indices(2);
      EXPECT_EQ(part.size(), (203 + world - 1) / world);
      // A padded position repeats the rank's own first sample.
      part.resize(s.own_samples());
      repeated += s.repeated();
      all.insert(all.end(), part.begin(), part.end());
    }
    EXPECT_EQ(sorted(all), iota_vector(203)) << "world " << world;
    EXPECT_EQ(repeated, (world - 203 % world) % world);
  }
}

TEST(sampler_test, ChunkOrderNeedsShuffleAndChunks) {
  auto const plain = sampler{100, true, 9}.epoch_indices(0);
  EXPECT_EQ((sampler{100, true, 9, 0, 1, {1, 4}}.epoch_indices(0)), plain);   // chunk of 1
  EXPECT_EQ((sampler{100, true, 9, 0, 1, {10, 0}}.epoch_indices(0)), plain);  // window 0
  EXPECT_FALSE((sampler{100, false, 9, 0, 1, {10, 4}}.chunk_aware()));
  EXPECT_EQ((sampler{100, false, 9, 0, 1, {10, 4}}.epoch_indices(0)), iota_vector(100));
}
