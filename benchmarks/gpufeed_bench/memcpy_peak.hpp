#pragma once
// This machine's multi-thread memcpy bandwidth for exactly the copies a loader run makes.
//
// The reference for `gpufeed-bench memcpy`: as many threads as loader workers copy the same
// samples (same size, same source, same order) into a ring of the loader's size, with nothing
// else: no queue, no hand-off, no consumer. It replays the loader's memory use, because memcpy's
// speed here depends on both: batch b goes into the slot the loader used for batch b (a loader
// with an eager consumer keeps reusing its first free slots, so fewer bytes than the ring stay hot
// in cache), and each slot is a fresh, touched allocation at the same offset within a page as the
// loader's slot (memcpy slows down when (destination - source) mod 4096 is small and negative:
// 4K aliasing; the allocator places the loader's slots at varying offsets). Threads claim
// runs of consecutive samples from one shared counter, as the loader's workers do (runs of
// batch / (4 x threads) samples, 1 to 16, never across a batch), so that they work on the same
// batch at once. It is the upper bound a loader of in-memory samples can reach on this machine:
// the loader's copies, without the loader.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

namespace gpufeed::bench {

struct memcpy_peak_config {
  std::span<std::byte const> source;  ///< dataset_samples x sample_bytes
  std::size_t sample_bytes = 0;
  std::size_t dataset_samples = 0;
  std::size_t batch_size = 0;
  std::size_t ring_slots = 0;  ///< slots of batch_size samples each
  unsigned threads = 1;
  std::size_t warmup_batches = 0;  ///< copied before the clock starts
  std::size_t batches = 0;         ///< copied while it runs
  bool shuffle = false;            ///< the loader's order: gpufeed::sampler(seed)
  std::uint64_t seed = 0;
};

struct memcpy_peak_result {
  double seconds = 0;
  std::uint64_t samples = 0;
  std::uint64_t bytes = 0;
};

class memcpy_peak {
 public:
  /// @throws std::invalid_argument if the source is smaller than the dataset it describes.
  explicit memcpy_peak(memcpy_peak_config const& config);

  /// The memory use of a loader run to replay. Empty: slots page-aligned, used in turn.
  struct ring_replay {
    std::span<std::size_t const> page_offsets;     ///< per slot, its address mod 4096
    std::span<std::uint32_t const> slot_sequence;  ///< per timed batch, its slot
  };

  /// One measurement: allocates and touches the ring, starts the threads, lets them copy the
  /// warm-up batches, then times the configured batches from the moment every thread is ready to
  /// the end of the last one. Blocks until done.
  [[nodiscard]] memcpy_peak_result run(ring_replay replay) const;

  /// Bytes of the ring each run copies into.
  [[nodiscard]] std::size_t ring_bytes() const noexcept;

 private:
  // Claims runs from `next` until sample `end` of the run is copied.
  // Batch b goes to slots[b % size] before `first_replayed`, then to the slot `sequence` names.
  struct ring_view {
    std::span<std::byte* const> slots;
    std::span<std::uint32_t const> sequence;
    std::size_t first_replayed = 0;
    [[nodiscard]] std::byte* slot_of(std::size_t batch) const noexcept;
  };
  void copy_until(ring_view ring, std::atomic<std::size_t>& next, std::size_t end) const;

  memcpy_peak_config config_;
  std::size_t run_length_ = 1;
};

}  // namespace gpufeed::bench
