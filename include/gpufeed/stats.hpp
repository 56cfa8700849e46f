#pragma once
/// @file
/// @brief What a loader measured about itself since construction.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpufeed {

/// @brief A snapshot of the loader's counters. Times are in seconds.
struct stats {
  double wall_s = 0;                 ///< since the loader was constructed
  double read_s = 0;                 ///< time inside dataset::read, summed over workers
  double slot_wait_s = 0;            ///< worker time spent idle because no slot was free
  double consumer_wait_s = 0;        ///< time next() spent blocked waiting for a batch
  std::uint64_t batches = 0;         ///< batches delivered by next()
  std::uint64_t samples = 0;         ///< samples delivered
  std::uint64_t bytes = 0;           ///< bytes delivered (samples x bytes per sample)
  std::uint64_t samples_read = 0;    ///< dataset::read calls that returned (prefetch included)
  std::uint64_t skipped = 0;         ///< samples skipped under error_policy::skip
  std::uint64_t failed_batches = 0;  ///< batches that raised a sample_error
  std::vector<std::size_t> skipped_indices;  ///< the first max_listed_skips skipped indices
  std::size_t ring_slots = 0;                ///< prefetch_depth
  std::size_t ring_ready = 0;                ///< slots ready and waiting for the consumer now
  std::size_t ring_leased = 0;               ///< slots leased to live batches now
  double ring_ready_mean = 0;                ///< mean of ring_ready seen at each next()
  std::size_t slot_bytes = 0;                ///< bytes of one slot
  std::size_t host_bytes = 0;                ///< host memory held by the ring (slots x slot bytes)
  std::size_t pinned_bytes = 0;              ///< of which page-locked (0 on the host path)
  unsigned workers = 0;

  // The CUDA path (placement::cuda); zero / "host" on the host path.
  std::string staging = "host";    ///< "host", "pinned" or "pageable"
  int device = -1;                 ///< the CUDA device, or -1
  std::size_t device_bytes = 0;    ///< device memory held by the ring (and transform constants)
  std::uint64_t copies = 0;        ///< batches copied to the device (one cudaMemcpyAsync each)
  std::uint64_t h2d_bytes = 0;     ///< bytes those copies moved
  std::uint64_t timed_copies = 0;  ///< copies whose completion was observed (timed below)
  double h2d_s = 0;                ///< GPU time of the timed copies
  double transform_s = 0;          ///< GPU time of their transforms
  double copy_wait_s = 0;          ///< worker time spent waiting for a slot's copy to finish

  /// @brief Fraction of wall time the consumer waited for data.
  [[nodiscard]] double stall_fraction() const noexcept {
    return wall_s > 0 ? consumer_wait_s / wall_s : 0.0;
  }
  /// @brief A one-line summary for logs.
  [[nodiscard]] std::string to_string() const;
};

}  // namespace gpufeed
