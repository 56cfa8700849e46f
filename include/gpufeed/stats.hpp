#pragma once
/// @file
/// @brief What a loader measured about itself since construction.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpufeed {

/// @brief What one stage of the pipeline measured: how often it ran and how long it took.
///
/// Quantiles come from a log-scale histogram (4 buckets per power of two) and are within
/// 12.5 % of the exact value; `count`, `total_s` and `max_s` are exact.
struct stage_stats {
  std::uint64_t count = 0;  ///< durations recorded
  double total_s = 0;       ///< their sum
  double p50_s = 0;         ///< median
  double p99_s = 0;         ///< 99th percentile
  double max_s = 0;         ///< the longest

  /// @brief The mean duration, or 0 when nothing was recorded.
  [[nodiscard]] double mean_s() const noexcept {
    return count > 0 ? total_s / static_cast<double>(count) : 0.0;
  }
};

/// @brief The ring's occupancy at one moment, as seen by next().
struct ring_sample {
  double t_s = 0;             ///< seconds since the loader was constructed
  std::uint32_t ready = 0;    ///< slots ready (the batch next() takes included)
  std::uint32_t leased = 0;   ///< slots leased to live batches
  std::uint32_t filling = 0;  ///< slots being filled by workers
};

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
  std::size_t ring_slots = 0;    ///< prefetch_depth: the slots in use (the active depth when auto)
  std::size_t ring_ready = 0;    ///< slots ready and waiting for the consumer now
  std::size_t ring_leased = 0;   ///< slots leased to live batches now
  double ring_ready_mean = 0;    ///< mean of ring_ready seen at each next()
  std::size_t slot_bytes = 0;    ///< bytes of one slot
  std::size_t host_bytes = 0;    ///< host memory held by the ring (slots x slot bytes)
  std::size_t pinned_bytes = 0;  ///< of which page-locked (0 on the host path)
  /// Host memory the ring keeps beside the batches: per slot, batch_size dataset indices,
  /// failure records and skip entries (32 bytes per sample). Counted with host_bytes in the
  /// autotuner's memory budget and in loader_options::held_batches_budget.
  std::size_t bookkeeping_bytes = 0;
  unsigned workers = 0;  ///< workers taking work (the active count when workers = auto)

  // Autotuning (loader_options::workers = auto_workers and/or prefetch_depth = auto_depth).
  bool autotuned = false;         ///< true when the loader chooses workers and/or the depth
  unsigned worker_threads = 0;    ///< threads started (workers is how many of them take work)
  std::size_t ring_capacity = 0;  ///< slots allocated (ring_slots is how many are in use)
  /// Slots added because every slot was leased to a live batch (held batches), included in
  /// ring_capacity; ring_max_slots is the most the ring may grow to.
  std::size_t ring_grown = 0;
  std::size_t ring_max_slots = 0;      ///< loader_options::held_batches_budget, in slots
  std::uint64_t autotune_changes = 0;  ///< changes the autotuner made (each one is logged)
  /// Batches delivered when the autotuner made its last change (0: none yet).
  std::uint64_t autotune_last_change_batch = 0;

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

  // Per-stage distributions (each total matches the matching *_s field above).
  stage_stats read;           ///< one per dataset::read call (read and decode)
  stage_stats slot_wait;      ///< one per time a worker went idle because no slot was free
  stage_stats consumer_wait;  ///< one per next() that waited for a batch (zero waits included;
                              ///< not the call that ends an epoch): delivered, raised, timed out
  stage_stats h2d;            ///< CUDA path: GPU time of each timed copy
  stage_stats transform;      ///< CUDA path: GPU time of each timed copy's transforms
  /// Seconds from construction until next() delivered the first batch (0 before it did): the
  /// start-up latency, which weighs on stall_fraction() in a short run.
  double first_batch_s = 0;
  /// The part of consumer_wait_s spent waiting for that first batch.
  double first_wait_s = 0;
  /// Ring occupancy over the whole run, oldest first, at most `ring_history_capacity` samples:
  /// taken at next() calls at most every `ring_history_interval_s`, which doubles (and every
  /// other sample is dropped) each time the history fills, so a long run keeps an even record.
  std::vector<ring_sample> ring_history;
  double ring_history_interval_s = 0;  ///< the spacing of ring_history now
  static constexpr std::size_t ring_history_capacity = 256;

  /// @brief Samples delivered per second of wall time.
  [[nodiscard]] double samples_per_s() const noexcept {
    return wall_s > 0 ? static_cast<double>(samples) / wall_s : 0.0;
  }
  /// @brief Bytes delivered per second of wall time.
  [[nodiscard]] double bytes_per_s() const noexcept {
    return wall_s > 0 ? static_cast<double>(bytes) / wall_s : 0.0;
  }
  /// @brief stall_fraction() after the first batch: the consumer's waits and the wall time
  /// from the first delivery on (the ring filling at start-up left out); 0 before it.
  [[nodiscard]] double steady_stall_fraction() const noexcept {
    auto const span = wall_s - first_batch_s;
    return first_batch_s > 0 && span > 0 ? (consumer_wait_s - first_wait_s) / span : 0.0;
  }
  /// @brief Fraction of the workers' time spent inside dataset::read (read_s / (workers x
  /// wall_s)): near 1, reading is the bottleneck. Under autotuning `workers` is the active count
  /// now, which may have changed during the run: an approximation.
  [[nodiscard]] double worker_busy_fraction() const noexcept {
    return wall_s > 0 && workers > 0 ? read_s / (workers * wall_s) : 0.0;
  }

  /// @brief Fraction of wall time the consumer waited for data.
  [[nodiscard]] double stall_fraction() const noexcept {
    return wall_s > 0 ? consumer_wait_s / wall_s : 0.0;
  }
  /// @brief A one-line summary for logs.
  [[nodiscard]] std::string to_string() const;
};

}  // namespace gpufeed
