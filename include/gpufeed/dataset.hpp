#pragma once
/// @file
/// @brief The interface users implement to plug their data into a loader.
///
/// @code
/// class squares final : public gpufeed::dataset {
///  public:
///   std::size_t size() const override { return 1000; }
///   gpufeed::sample_spec spec() const override {
///     using gpufeed::dtype;
///     return gpufeed::sample_spec{}.add("x", dtype::f32, {}).add("y", dtype::f32, {});
///   }
///   void read(std::size_t i, gpufeed::sample_view out,
///             gpufeed::read_context const&) const override {
///     out.as<float>(0)[0] = float(i);
///     out.as<float>(1)[0] = float(i * i);
///   }
/// };
/// @endcode

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>

#include "gpufeed/sample_spec.hpp"
#include "gpufeed/sample_view.hpp"

namespace gpufeed {

/// @brief What a read knows about itself.
struct read_context {
  /// The sample's index in the dataset.
  std::size_t index = 0;
  /// The epoch being read.
  std::uint64_t epoch = 0;
  /// The worker thread reading it (0 .. workers-1). Never use it to derive randomness.
  unsigned worker = 0;
  /// Seed for any random choice in this read (augmentation): a function of the loader's seed,
  /// the epoch and the index only, so the same sample gets the same pixels on any worker.
  std::uint64_t seed = 0;
  /// Set when the loader is being destroyed; long reads may poll it and return early.
  std::atomic<bool> const* stop = nullptr;

  /// @brief Whether the loader asks this read to stop early (its result will be discarded).
  [[nodiscard]] bool stop_requested() const noexcept {
    return stop != nullptr && stop->load(std::memory_order_relaxed);
  }
};

/// @brief One sample of a worker's claim, as `dataset::read_each` receives it.
struct sample_read {
  std::size_t index = 0;  ///< the sample's index in the dataset
  sample_view out;        ///< where it goes
  read_context context;   ///< as `read` gets it
  /// Set by `read_each` when this sample's read failed (what `read` would have thrown).
  std::exception_ptr failure;
};

/// @brief A sample read before the loader knows the batch layout (`dataset::stage`): it keeps
/// the sample's data until it can be written into its batch.
class staged_sample {
 public:
  virtual ~staged_sample() = default;
  /// @brief The layout of this sample. The loader's layout is the first staged sample's.
  [[nodiscard]] virtual sample_spec spec() const = 0;
  /// @brief Writes the sample into `out` (the loader's layout). Called at most once, by a worker.
  /// @throws as `dataset::read` does (e.g. when this sample's layout differs from the loader's).
  virtual void write(sample_view out) = 0;
};

/// @brief A random-access collection of samples of one `sample_spec`.
///
/// `read` is called concurrently from many worker threads and must be thread-safe. It writes the
/// sample straight into `out` (the batch's memory): no allocation is needed. To report a bad
/// sample, throw: `file_error` names the file; any exception reaches the consumer wrapped in a
/// `sample_error` with the index, or is counted and skipped under `error_policy::skip`.
class dataset {
 public:
  virtual ~dataset() = default;
  /// @brief Number of samples.
  [[nodiscard]] virtual std::size_t size() const = 0;
  /// @brief The layout of every sample. Called once, at loader construction, unless
  /// `layout_from_first_sample()` is true.
  [[nodiscard]] virtual sample_spec spec() const = 0;
  /// @brief Writes sample `index` into `out`. Thread-safe; may throw.
  virtual void read(std::size_t index, sample_view out, read_context const& ctx) const = 0;
  /// @brief Reads the samples of one worker's claim (consecutive positions of one batch), when
  /// `reads_claims()` is true. The default calls `read` for each and keeps what it throws in
  /// `sample_read::failure`. Throwing `worker_error` (or `out_of_memory`) stops the loader;
  /// nothing else may escape.
  virtual void read_each(std::span<sample_read> reads) const;
  /// @brief Whether the loader gives this dataset whole claims (`read_each`) rather than one
  /// sample at a time (`read`): for reads that cost a round trip (to another process), paid once
  /// per claim. Per-sample read times and a timeout's late sample are then the claim's.
  [[nodiscard]] virtual bool reads_claims() const { return false; }
  /// @brief Whether each claim is a whole batch (with `reads_claims()`: one `read_each` per
  /// batch, on one worker): for datasets that make the batch from all its samples at once (a
  /// Python collate_fn). Many workers then fill many batches, each one its own.
  [[nodiscard]] virtual bool reads_whole_batches() const { return false; }

  /// @brief Whether the batch layout comes from the first sample a worker reads (`stage`) rather
  /// than from `spec()`: for datasets that cannot know it without reading, and whose reads need
  /// the worker's context. The loader then reads nothing on the calling thread: its workers stage
  /// the first samples of the first batch, the first one read gives the layout, and every staged
  /// sample is written into its batch (read once, its failure reported as a read's would be; a
  /// first batch whose every sample failed is its batch's error, and the next batch's samples
  /// give the layout).
  [[nodiscard]] virtual bool layout_from_first_sample() const { return false; }
  /// @brief Reads sample `index` without a place to write it, on a worker, before the layout is
  /// known (only when `layout_from_first_sample()`). Thread-safe; may throw, as `read`.
  [[nodiscard]] virtual std::unique_ptr<staged_sample> stage(std::size_t index,
                                                             read_context const& ctx) const;
  /// @brief The loader chose `first`'s layout (`first.spec()`): called once, before any `read`
  /// or staged `write`, so that the dataset can adopt what else it learned from that sample.
  virtual void layout_chosen(staged_sample const& first) const;
  /// @brief Samples per storage chunk (consecutive indices stored and decompressed together, as
  /// in a chunked HDF5 file), or 0 when reads have no such structure. The loader's chunk-aware
  /// shuffle (`loader_options::chunk_window`) draws from a few chunks at a time when it is > 1.
  [[nodiscard]] virtual std::size_t storage_chunk() const { return 0; }
};

}  // namespace gpufeed
