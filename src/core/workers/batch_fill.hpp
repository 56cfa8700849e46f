#pragma once
// Filling a batch: a worker claims samples of a slot's batch, reads each straight into the slot
// (dataset::read), keeps a failed read's exception beside it, and the worker that reads the
// batch's last sample completes it: closes the gaps of skipped samples, or (error_policy::raise)
// builds one sample_error naming every failed sample, and queues the batch's copy on the CUDA
// path. A claim of an open-ended dataset whose source has no more samples marks the batch
// `ended` (no copy, nothing delivered). Publishing the completed batch to the consumer is the
// caller's.

#include <atomic>
#include <cstddef>
#include <exception>
#include <vector>

#include "core/device/device_path.hpp"
#include "core/epochs/epoch_source.hpp"
#include "core/metrics/loader_metrics.hpp"
#include "core/ring/slot.hpp"
#include "core/workers/staged_reads.hpp"
#include "gpufeed/dataset.hpp"
#include "gpufeed/detail/adapted_dataset.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/options.hpp"

namespace gpufeed::detail {

/// What a failed read says: the dataset's message, and the file when it named one (file_error).
[[nodiscard]] sample_failure describe_failure(std::exception_ptr cause, unsigned worker,
                                              std::size_t index, std::uint64_t epoch);
/// One sample_error naming every failure (at least one), the first one's cause nested.
[[nodiscard]] std::exception_ptr gather_failures(std::vector<sample_failure> failures);

class batch_filler {
 public:
  /// `stop` is set when the loader stops (reads may poll it); `staged` holds reads made before
  /// the layout was known, written instead of read again; `threads` is the pool's thread count.
  /// Every reference must outlive this.
  batch_filler(dataset const& data, slot_layout const& layout, loader_options const& options,
               epoch_source const& epochs, device_path& device, loader_metrics& metrics,
               std::atomic<bool> const& stop, staged_reads& staged, unsigned threads);

  /// Claims samples of `s` (s.grain at a time) and reads them, until none is left to claim, the
  /// batch is cancelled or the loader stops. The caller is attached to `s`. On the CUDA path a
  /// worker waits for the slot's previous copy once it holds its first claim, and only then: a
  /// worker that finds nothing left to claim has nothing to write, and waits for nothing.
  /// Returns true when this call read the batch's last sample: the batch is then complete (its
  /// contents settled, its copy queued), and the caller publishes it.
  /// @throws what the device path throws (naming the slot and the batch), and a dataset's
  /// worker_error: the loader cannot go on.
  [[nodiscard]] bool fill(slot& s, unsigned worker);

 private:
  /// Reads positions [first, last) of `s`: each one at a time, or the claim at once when the
  /// dataset reads claims; staged reads are written instead.
  void read_claim(slot& s, std::size_t first, std::size_t last, unsigned worker);
  void read_one(slot& s, std::size_t position, unsigned worker);
  /// Writes a staged read of `s`'s `position` (or keeps its failure).
  void write_staged(staged_read& staged, slot& s, std::size_t position, unsigned worker);
  /// Every read of `s` has returned and this worker is still attached: the slot is its alone.
  /// Closes the gaps of skipped samples (error_policy::skip), or gathers every failure into
  /// s.error (error_policy::raise), and sets s.delivered.
  void settle(slot& s);
  void complete(slot& s, unsigned worker);

  dataset const& data_;
  slot_layout const& layout_;
  loader_options const& options_;
  epoch_source const& epochs_;
  device_path& device_;
  loader_metrics& metrics_;
  std::atomic<bool> const& stop_;
  staged_reads& staged_;
  adapted_dataset const* claims_by_;  // the dataset when it reads whole claims, else null
  std::vector<std::vector<sample_read>> claims_;  // per worker: a claim's reads (capacity kept)
};

}  // namespace gpufeed::detail
