#include "gpufeed/sampler.hpp"

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

sampler::sampler(std::size_t dataset_size, bool shuffle, std::uint64_t seed, unsigned rank,
                 unsigned world_size)
    : n_{dataset_size}, shuffle_{shuffle}, seed_{seed}, rank_{rank}, world_size_{world_size} {
  GPUFEED_EXPECTS(world_size >= 1, "world_size = 0; it must be at least 1");
  GPUFEED_EXPECTS(rank < world_size, "rank = " + std::to_string(rank) +
                                         " is out of range; allowed: 0 to world_size - 1 = " +
                                         std::to_string(world_size - 1));
  shard_size_ = n_ > rank_ ? (n_ - rank_ + world_size_ - 1) / world_size_ : 0;
  // Smallest even bit count 2h with 2^(2h) >= n, so cycle walking takes < 4 steps on average.
  auto const bits = n_ <= 1 ? 0U : static_cast<unsigned>(std::bit_width(n_ - 1));
  half_bits_ = bits == 0 ? 1 : (bits + 1) / 2;
}

std::size_t sampler::permute(std::uint64_t key, std::size_t x) const noexcept {
  auto const mask = (std::uint64_t{1} << half_bits_) - 1;
  std::uint64_t value = x;
  do {  // cycle walking: re-encrypt until the value falls inside [0, n)
    std::uint64_t left = value >> half_bits_;
    std::uint64_t right = value & mask;
    for (unsigned round = 0; round < feistel_rounds; ++round) {
      auto const next = left ^ (splitmix(right ^ key ^ (std::uint64_t{round} << 58U)) & mask);
      left = right;
      right = next;
    }
    value = (left << half_bits_) | right;
  } while (value >= n_);
  return static_cast<std::size_t>(value);
}

std::size_t sampler::index(std::uint64_t epoch, std::size_t position) const noexcept {
  auto const global = rank_ + position * world_size_;
  return shuffle_ ? permute(mix_seed(seed_, epoch, 0x5eed), global) : global;
}

std::vector<std::size_t> sampler::epoch_indices(std::uint64_t epoch) const {
  std::vector<std::size_t> out(shard_size_);
  for (std::size_t i = 0; i < shard_size_; ++i) {
    out[i] = index(epoch, i);
  }
  return out;
}

}  // namespace gpufeed
