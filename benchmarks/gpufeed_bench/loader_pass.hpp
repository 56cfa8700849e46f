#pragma once
// Drives a loader from the consumer's side, the way a training loop does.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpufeed/loader.hpp"

namespace gpufeed::bench {

/// What a run of `consume` delivered.
struct consumed {
  std::uint64_t batches = 0;
  std::uint64_t samples = 0;
  std::uint64_t epoch_ends = 0;       ///< times next() said an epoch was over (the run went on)
  std::vector<std::uintptr_t> slots;  ///< ring slots seen: field 0's address, first use
  std::vector<std::uint32_t> slot_sequence;  ///< for each batch, its slot (index into `slots`)
};

/// The next batch from `source`, crossing an epoch end: when next() says an epoch is over, it
/// asks once more. Adds the epoch ends crossed to `*epoch_ends` when that is given.
/// @throws std::runtime_error if the loader ends two epochs in a row without a batch.
[[nodiscard]] gpufeed::batch next_batch(gpufeed::loader& source,
                                        std::uint64_t* epoch_ends = nullptr);

/// Takes `batches` batches from `source` and releases each at once, crossing epoch ends.
/// With `record_slots`, also records which ring slot each batch came in (by field 0's address).
/// @throws std::runtime_error if the loader ends two epochs in a row without a batch.
consumed consume(gpufeed::loader& source, std::size_t batches, bool record_slots = false);

}  // namespace gpufeed::bench
