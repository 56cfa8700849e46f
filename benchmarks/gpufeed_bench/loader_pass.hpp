#pragma once
// Drives a loader from the consumer's side, the way a training loop does.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
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

/// One timed run of a loader: what it delivered, in how long, and its statistics around it.
struct timed_run {
  double seconds = 0;
  consumed delivered;
  gpufeed::stats before;  ///< after the warm-up
  gpufeed::stats after;
  /// How much a counter of the statistics grew during the run (e.g. &stats::read_s).
  template <class T>
  [[nodiscard]] double grew(T gpufeed::stats::*counter) const {
    return static_cast<double>(after.*counter - before.*counter);
  }
};

/// `warmup` untimed batches of `source`, then `batches` timed ones, each released at once (as
/// consume() does). `finish`, when given, runs before the clock stops: the bytes are delivered
/// when the consumer stream has passed them, so a CUDA run synchronizes it there.
[[nodiscard]] timed_run time_batches(gpufeed::loader& source, std::size_t warmup,
                                     std::size_t batches, bool record_slots = false,
                                     std::function<void()> const& finish = {});

/// A synthetic training step of `length`: `spin` keeps the core busy (a CPU step); otherwise
/// the thread sleeps, leaving the core to the workers (a GPU step, where the host mostly waits).
void run_step(std::chrono::nanoseconds length, bool spin);

}  // namespace gpufeed::bench
