#pragma once
/// @file
/// @brief Internal, not part of the API: what gpufeed's own adapters (Python datasets read on
/// threads or in worker processes, libtorch datasets) tell the engine beyond a `dataset`'s
/// size, spec and read. A user's dataset derives from `gpufeed::dataset` and never sees these.

#include <cstddef>
#include <exception>
#include <memory>
#include <span>

#include "gpufeed/dataset.hpp"
#include "gpufeed/sample_spec.hpp"
#include "gpufeed/sample_view.hpp"

namespace gpufeed::detail {

/// One sample of a worker's claim, as `adapted_dataset::read_each` receives it.
struct sample_read {
  std::size_t index = 0;  ///< the sample's index in the dataset
  sample_view out;        ///< where it goes
  read_context context;   ///< as `read` gets it
  /// Set by `read_each` when this sample's read failed (what `read` would have thrown).
  std::exception_ptr failure;
  /// Set by `read_each` of an open-ended dataset (`open_ended_sources()`): source `source` has
  /// no samples left in this epoch, and this position holds none.
  bool ended = false;
  /// The source that answered `ended` (0 .. open_ended_sources()-1).
  std::size_t source = 0;
  /// Which run of `context.epoch` this read is for: it changes when the consumer starts an
  /// epoch over (set_epoch, restore), so that an open-ended dataset's sources begin that epoch
  /// anew (as every iter() of torch's loader makes its workers' iterators again).
  std::uint64_t run = 0;
};

/// A sample read before the loader knows the batch layout (`adapted_dataset::stage`): it keeps
/// the sample's data until it can be written into its batch.
class staged_sample {
 public:
  virtual ~staged_sample() = default;
  /// The layout of this sample. The loader's layout is the first staged sample's.
  [[nodiscard]] virtual sample_spec spec() const = 0;
  /// Writes the sample into `out` (the loader's layout). Called at most once, by a worker.
  /// @throws as `dataset::read` does (e.g. when this sample's layout differs from the loader's).
  virtual void write(sample_view out) = 0;
};

/// Where a ring's host memory comes from when it cannot be the loader's own: memory that other
/// processes map too (worker processes writing samples straight into their batches).
///
/// The loader asks for each slot's memory once (at construction, and when held batches grow
/// the ring) and keeps the source alive as long as any batch. On the CUDA path with pinned
/// staging the loader page-locks what it is given (`cudaHostRegister`) instead of allocating.
class host_memory_source {
 public:
  virtual ~host_memory_source() = default;
  /// `bytes` bytes for slot `id`, page-aligned, valid for the source's life; never the same
  /// memory for two ids. Called by one thread at a time.
  /// @throws out_of_memory saying what did not fit.
  [[nodiscard]] virtual std::byte* slot_memory(std::size_t id, std::size_t bytes) = 0;
};

/// A dataset that an adapter of gpufeed's makes: the engine asks it how it reads.
class adapted_dataset : public dataset {
 public:
  /// Reads the samples of one worker's claim (consecutive positions of one batch), when
  /// `reads_claims()` is true. The default calls `read` for each and keeps what it throws in
  /// `sample_read::failure`. Throwing `worker_error` (or `out_of_memory`) stops the loader;
  /// nothing else may escape.
  virtual void read_each(std::span<sample_read> reads) const;
  /// Whether the loader gives this dataset whole claims (`read_each`) rather than one sample at
  /// a time (`read`): for reads that cost a round trip (to another process), paid once per
  /// claim. Per-sample read times and a timeout's late sample are then the claim's.
  [[nodiscard]] virtual bool reads_claims() const { return false; }
  /// Whether each claim is a whole batch (with `reads_claims()`: one `read_each` per batch, on
  /// one worker): for datasets that make the batch from all its samples at once (a Python
  /// collate_fn). Many workers then fill many batches, each one its own.
  [[nodiscard]] virtual bool reads_whole_batches() const { return false; }

  /// Whether the batch layout comes from the first sample a worker reads (`stage`) rather than
  /// from `spec()`: for datasets that cannot know it without reading, and whose reads need the
  /// worker's context. The loader then reads nothing on the calling thread: its workers stage
  /// the first samples of the first batch, the first one read gives the layout, and every
  /// staged sample is written into its batch (read once, its failure reported as a read's
  /// would be; a first batch whose every sample failed is its batch's error, and the next
  /// batch's samples give the layout).
  [[nodiscard]] virtual bool layout_from_first_sample() const { return false; }
  /// Reads sample `index` without a place to write it, on a worker, before the layout is known
  /// (only when `layout_from_first_sample()`). Thread-safe; may throw, as `read`.
  [[nodiscard]] virtual std::unique_ptr<staged_sample> stage(std::size_t index,
                                                             read_context const& ctx) const;
  /// The loader chose `first`'s layout (`first.spec()`): called once, before any `read` or
  /// staged `write`, so that the dataset can adopt what else it learned from that sample.
  virtual void layout_chosen(staged_sample const& first) const;

  /// Non-zero for an open-ended dataset (an iterable one): its epochs have no length known in
  /// advance, and `size()` is not read. Its samples come from this many sources (e.g. one
  /// iterator per worker process), each of which ends on its own, and says so in `read_each`
  /// (`sample_read::ended`). The epoch ends when every source has ended: the batches planned
  /// before are delivered in order, those a source could not make are left out, and `next()`
  /// then says end of epoch. Needs `reads_whole_batches()`: a batch is made whole or ends.
  [[nodiscard]] virtual std::size_t open_ended_sources() const { return 0; }

  /// Where the ring's host memory comes from; null (the default): the loader allocates it.
  [[nodiscard]] virtual std::shared_ptr<host_memory_source> host_memory() const { return {}; }
};

/// `data` as an adapted dataset, or null for a plain one (read sample by sample, its layout
/// from `spec()`).
[[nodiscard]] inline adapted_dataset const* adapted(dataset const& data) noexcept {
  return dynamic_cast<adapted_dataset const*>(&data);
}

/// The sources of `data`'s open-ended epochs, or 0 when its epochs have `size()` samples.
[[nodiscard]] inline std::size_t open_ended_sources(dataset const& data) {
  auto const* a = adapted(data);
  return a != nullptr ? a->open_ended_sources() : 0;
}

}  // namespace gpufeed::detail
