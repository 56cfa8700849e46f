#include "gpufeed/sampler.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "gpufeed/error.hpp"

namespace gpufeed {

namespace {
constexpr std::uint64_t splitmix(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27U)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31U);
}
// Enough rounds that a keyed Feistel network is indistinguishable from a random permutation for
// shuffling purposes (Luby-Rackoff needs 4 with a good round function).
constexpr unsigned feistel_rounds = 6;
}  // namespace

std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b, std::uint64_t c) noexcept {
  return splitmix(splitmix(splitmix(a) ^ b) ^ c);
}

std::size_t permute_index(std::size_t x, std::size_t n, std::uint64_t key) noexcept {
  // Smallest even bit count 2h with 2^(2h) >= n, so cycle walking takes < 4 steps on average.
  auto const bits = n <= 1 ? 0U : static_cast<unsigned>(std::bit_width(n - 1));
  auto const half_bits = bits == 0 ? 1U : (bits + 1) / 2;
  auto const mask = (std::uint64_t{1} << half_bits) - 1;
  std::uint64_t value = x;
  do {  // cycle walking: re-encrypt until the value falls inside [0, n)
    std::uint64_t left = value >> half_bits;
    std::uint64_t right = value & mask;
    for (unsigned round = 0; round < feistel_rounds; ++round) {
      auto const next = left ^ (splitmix(right ^ key ^ (std::uint64_t{round} << 58U)) & mask);
      left = right;
      right = next;
    }
    value = (left << half_bits) | right;
  } while (value >= n);
  return static_cast<std::size_t>(value);
}

sampler::sampler(std::size_t dataset_size, bool shuffle, std::uint64_t seed, unsigned rank,
                 unsigned world_size, chunk_order chunks, even_shards evening)
    : n_{dataset_size},
      shuffle_{shuffle},
      seed_{seed},
      rank_{rank},
      world_size_{world_size},
      chunks_{chunks} {
  GPUFEED_EXPECTS(world_size >= 1, "world_size = 0; it must be at least 1");
  GPUFEED_EXPECTS(rank < world_size, "rank = " + std::to_string(rank) +
                                         " is out of range; allowed: 0 to world_size - 1 = " +
                                         std::to_string(world_size - 1));
  own_ = n_ > rank_ ? (n_ - rank_ + world_size_ - 1) / world_size_ : 0;
  shard_size_ =
      evening == even_shards::pad ? (n_ + world_size_ - 1) / world_size_ : n_ / world_size_;
}

std::size_t sampler::index(std::uint64_t epoch, std::size_t position) const noexcept {
  if (position >= own_) {  // padding
    if (own_ == 0) {       // fewer samples than ranks: the epoch's order from its start
      auto const global = position % n_;
      return shuffle_ ? permute_index(global, n_, mix_seed(seed_, epoch, 0x5eed)) : global;
    }
    position -= own_;  // this rank's own samples again, from its first
  }
  if (chunk_aware()) {
    // Contiguous shards: rank r takes the r-th run of the epoch's order, so its consecutive
    // positions stay inside the same windows of chunks. Interleaving (below) would give each
    // rank a slice of every window, and every rank would decompress every chunk.
    auto const base = n_ / world_size_;
    auto const extra = n_ % world_size_;  // the first `extra` ranks take one more, as below
    auto const start = rank_ * base + std::min<std::size_t>(rank_, extra);
    return chunk_aware_index(epoch, start + position);
  }
  auto const global = rank_ + position * world_size_;
  if (!shuffle_) {
    return global;
  }
  return permute_index(global, n_, mix_seed(seed_, epoch, 0x5eed));
}

std::size_t sampler::chunk_aware_index(std::uint64_t epoch, std::size_t global) const noexcept {
  auto const c = chunks_.chunk;
  auto const w = chunks_.window;
  auto const full =
      n_ / c;  // whole chunks; a short tail chunk (n % c samples) joins the last window
  auto const tail = n_ % c;
  auto const windows = full == 0 ? std::size_t{1} : (full + w - 1) / w;
  auto const window_samples = w * c;
  auto const j = std::min(global / window_samples, windows - 1);
  auto const offset = global - j * window_samples;
  auto const chunks_here = std::min(w, full - j * w);
  auto const size = chunks_here * c + (j + 1 == windows ? tail : 0);
  auto const drawn = permute_index(offset, size, mix_seed(seed_, epoch, 0x3000 + j));
  auto const k = drawn / c;
  auto const row = drawn % c;
  if (k >= chunks_here) {
    return full * c + row;  // the short tail chunk
  }
  auto const chunk = permute_index(j * w + k, full, mix_seed(seed_, epoch, 0xc4c4));
  return chunk * c + row;
}

std::vector<std::size_t> sampler::epoch_indices(std::uint64_t epoch) const {
  std::vector<std::size_t> out(shard_size_);
  for (std::size_t i = 0; i < shard_size_; ++i) {
    out[i] = index(epoch, i);
  }
  return out;
}

}  // namespace gpufeed
