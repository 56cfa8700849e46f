#pragma once
/// @file
/// @brief The epoch's sample order: a pure function of (seed, epoch, rank, world_size).
///
/// The whole epoch is a permutation of [0, n) (the identity when not shuffling). Rank r of W
/// takes positions r, r + W, r + 2W, ... of it: ranks are disjoint, together they cover the
/// epoch, and shard sizes differ by at most one. The permutation is computed per position
/// (a keyed Feistel network with cycle walking), so it needs no memory, any position is O(1),
/// and the result never depends on how many workers ask.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpufeed {

/// @brief Maps (epoch, position in this rank's shard) to a dataset index.
class sampler {
 public:
  /// @throws logic_error if world_size is 0 or rank >= world_size.
  sampler(std::size_t dataset_size, bool shuffle, std::uint64_t seed, unsigned rank = 0,
          unsigned world_size = 1);

  [[nodiscard]] std::size_t dataset_size() const noexcept { return n_; }
  /// @brief Samples this rank sees per epoch: ceil((n - rank) / world_size).
  [[nodiscard]] std::size_t shard_size() const noexcept { return shard_size_; }
  [[nodiscard]] unsigned rank() const noexcept { return rank_; }
  [[nodiscard]] unsigned world_size() const noexcept { return world_size_; }
  [[nodiscard]] bool shuffled() const noexcept { return shuffle_; }

  /// @brief The dataset index at `position` (< shard_size()) of this rank's shard in `epoch`.
  [[nodiscard]] std::size_t index(std::uint64_t epoch, std::size_t position) const noexcept;
  /// @brief The whole shard of `epoch`, in order (allocates; for tests and audits).
  [[nodiscard]] std::vector<std::size_t> epoch_indices(std::uint64_t epoch) const;

 private:
  std::size_t permute(std::uint64_t key, std::size_t x) const noexcept;
  std::size_t n_;
  bool shuffle_;
  std::uint64_t seed_;
  unsigned rank_;
  unsigned world_size_;
  std::size_t shard_size_;
  unsigned half_bits_ = 0;  // the Feistel domain is 2^(2 * half_bits_) >= n_
};

/// @brief A well-mixed 64-bit hash of several values (splitmix64 finalizer, chained).
[[nodiscard]] std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b,
                                     std::uint64_t c = 0) noexcept;

}  // namespace gpufeed
