#pragma once
/// @file
/// @brief The epoch's sample order: a pure function of (seed, epoch, rank, world_size).
///
/// The whole epoch is a permutation of [0, n) (the identity when not shuffling). Rank r of W
/// takes positions r, r + W, r + 2W, ... of it: the ranks' samples are disjoint and together
/// they cover the epoch. Every rank reads the same number of positions, so that every rank has
/// the same number of batches (a rank with a batch fewer would leave the others waiting in a
/// collective): where n is not a multiple of W, `even_shards` says whether the ranks with a
/// sample fewer read their first sample twice (`pad`) or the others leave their last one out
/// (`trim`). The permutation is computed per position (a keyed Feistel network with cycle
/// walking), so it needs no memory, any position is O(1), and the result never depends on how
/// many workers ask.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpufeed {

/// @brief Chunk-aware shuffle settings: shuffle `chunk`-sample chunks, then draw samples at random
/// from a window of `window` chunks at a time. Off when either is below 2 (`window` 1 is allowed:
/// one chunk at a time).
struct chunk_order {
  std::size_t chunk = 0;   ///< samples per storage chunk (`dataset::storage_chunk()`)
  std::size_t window = 0;  ///< chunks drawn from together
  [[nodiscard]] bool active() const noexcept { return chunk > 1 && window > 0; }
};

/// @brief How ranks whose shares of an epoch differ by one sample are evened out.
enum class even_shards : std::uint8_t {
  /// Every rank reads ceil(n / W) positions: a rank with a sample fewer reads its own first
  /// sample again at its last position (the epoch is covered; at most W - 1 repeats).
  pad,
  /// Every rank reads floor(n / W) positions: the n % W samples at the end of the epoch's order
  /// are left out (ranks stay disjoint; nothing repeats).
  trim,
};

/// @brief Maps (epoch, position in this rank's shard) to a dataset index.
///
/// With a `chunk_order`, the epoch's permutation is FFCV-style quasi-random: the full chunks are
/// shuffled, and consecutive groups of `window` of them are drawn from together, each group's
/// samples in a random order (a short last chunk joins the last group). The epoch is cut into
/// such windows of `window` x `chunk` positions, each drawing from `window` chunks (+ the tail
/// chunk in the last), so a reader that caches the current window's chunks (and the next
/// window's, for workers running ahead) decompresses each chunk about once per epoch. Ranks then
/// take contiguous runs of that order, not interleaved positions, so that each rank decompresses
/// only its own share of the chunks.
class sampler {
 public:
  /// @throws logic_error if world_size is 0 or rank >= world_size.
  sampler(std::size_t dataset_size, bool shuffle, std::uint64_t seed, unsigned rank = 0,
          unsigned world_size = 1, chunk_order chunks = {}, even_shards evening = even_shards::pad);

  [[nodiscard]] std::size_t dataset_size() const noexcept { return n_; }
  /// @brief Positions this rank reads per epoch, the same on every rank: ceil(n / world_size)
  /// with even_shards::pad, floor(n / world_size) with even_shards::trim.
  [[nodiscard]] std::size_t shard_size() const noexcept { return shard_size_; }
  /// @brief Samples of the epoch that are this rank's own: ceil((n - rank) / world_size) (the
  /// first n % world_size ranks have one more).
  [[nodiscard]] std::size_t own_samples() const noexcept { return own_; }
  /// @brief Positions of this rank's shard that read a sample again (padding): 0 or 1.
  [[nodiscard]] std::size_t repeated() const noexcept {
    return shard_size_ > own_ ? shard_size_ - own_ : 0;
  }
  [[nodiscard]] unsigned rank() const noexcept { return rank_; }
  [[nodiscard]] unsigned world_size() const noexcept { return world_size_; }
  [[nodiscard]] bool shuffled() const noexcept { return shuffle_; }
  /// @brief Whether the chunk-aware order is in force (shuffling, with an active chunk_order).
  [[nodiscard]] bool chunk_aware() const noexcept { return shuffle_ && chunks_.active(); }

  /// @brief The dataset index at `position` (< shard_size()) of this rank's shard in `epoch`.
  [[nodiscard]] std::size_t index(std::uint64_t epoch, std::size_t position) const noexcept;
  /// @brief The whole shard of `epoch`, in order (allocates; for tests and audits).
  [[nodiscard]] std::vector<std::size_t> epoch_indices(std::uint64_t epoch) const;

 private:
  [[nodiscard]] std::size_t chunk_aware_index(std::uint64_t epoch,
                                              std::size_t global) const noexcept;
  std::size_t n_;
  bool shuffle_;
  std::uint64_t seed_;
  unsigned rank_;
  unsigned world_size_;
  chunk_order chunks_;
  std::size_t own_;
  std::size_t shard_size_;
};

/// @brief A keyed pseudo-random permutation of [0, n): a Feistel network over the smallest
/// even-bit power of two >= n, with cycle walking. O(1) memory and time per element.
[[nodiscard]] std::size_t permute_index(std::size_t x, std::size_t n, std::uint64_t key) noexcept;

/// @brief A well-mixed 64-bit hash of several values (splitmix64 finalizer, chained).
[[nodiscard]] std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b,
                                     std::uint64_t c = 0) noexcept;

}  // namespace gpufeed
