#pragma once
/// @file
/// @brief The loader: a pool of worker threads filling a ring of batch slots ahead of the
/// consumer.
///
/// @code
/// auto data = std::make_shared<gpufeed::synthetic>(10'000, spec);
/// gpufeed::loader loader{data, {.batch_size = 64, .workers = 4, .shuffle = true, .seed = 1}};
/// for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
///   loader.set_epoch(epoch);
///   for (auto& batch : loader) {
///     auto images = batch.field("image");   // [64, H, W, C] uint8
///     train_step(images, batch.step());
///   }
/// }
/// @endcode
///
/// Threading: one consumer thread calls next() / set_epoch() / restore(); snapshot() and the
/// const queries may be called from any thread.
///
/// A loader that was moved from has no workers, ring or dataset: every member function but
/// assignment and destruction throws `logic_error` saying so.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gpufeed/batch.hpp"
#include "gpufeed/dataset.hpp"
#include "gpufeed/detail/epoch_iterator.hpp"
#include "gpufeed/epoch_order.hpp"
#include "gpufeed/loader_state.hpp"
#include "gpufeed/options.hpp"
#include "gpufeed/stats.hpp"

namespace gpufeed {

namespace detail {
class loader_front;
}  // namespace detail

/// @brief What `loader::try_next_for` found.
struct next_result {
  enum class status : std::uint8_t {
    ready,         ///< `value` holds the next batch
    end_of_epoch,  ///< the epoch is over (as next() returning nullopt)
    pending,       ///< the batch was not ready within the wait; nothing was consumed
  };
  status what = status::pending;
  std::optional<batch> value;
};

/// @brief Delivers batches of a dataset in plan order, prepared ahead by worker threads.
class loader {
 public:
  /// @brief Validates the options, allocates the ring (all memory, once) and starts the workers,
  /// which begin filling epoch 0 at once. For a dataset whose layout comes from its first sample
  /// (`dataset::layout_from_first_sample`), nothing is read here: workers stage the first batch's
  /// samples at once, and the ring is allocated when the first `next()` finds the layout learned
  /// (the errors below are then thrown by that `next()`).
  /// @throws logic_error on bad options (naming the option, its value and the allowed range), or
  /// a size that does not fit in std::size_t.
  /// @throws out_of_memory naming batch_size or prefetch_depth when the ring is more than the
  /// machine's physical memory (checked before anything is allocated), or if it cannot be
  /// allocated.
  loader(std::shared_ptr<dataset const> data, loader_options options);
  /// @brief Stops and joins every worker. Returns as soon as reads in progress return; never
  /// throws. Batches still alive stay valid.
  ~loader();
  loader(loader&&) noexcept;
  /// @brief Stops this loader's workers (as the destructor does), then takes `other`'s.
  loader& operator=(loader&& other) noexcept;
  loader(loader const&) = delete;
  loader& operator=(loader const&) = delete;

  /// @brief Positions the loader at the start of `epoch`. Prefetched batches are kept when the
  /// loader is already there, or has just delivered the last batch of `epoch - 1`; otherwise
  /// batches being prepared are discarded (live batches stay valid).
  void set_epoch(std::uint64_t epoch);
  /// @brief With `loader_options::order = sample_order::given`: gives `epoch`'s order and
  /// positions the loader at its start. Batches prepared from an earlier order of the same epoch
  /// are discarded. Copies nothing but the order; O(order size) to check it.
  /// @throws logic_error when the loader's order is builtin, an index is not below the
  /// dataset's size (naming its position), or the batch sizes do not fit (see epoch_order).
  void set_epoch(std::uint64_t epoch, epoch_order order);
  /// @brief The epoch the next batch belongs to.
  [[nodiscard]] std::uint64_t epoch() const;

  /// @brief The next batch of the current epoch, or nullopt at its end (after which the loader
  /// stands at the start of the next epoch, whose first batches are already being prepared).
  /// Blocks until the batch is ready, up to `timeout`.
  /// @throws sample_error if samples of the batch failed under `error_policy::raise`, naming
  /// each of them (`sample_error::failures()`; the batch is consumed: the following call goes on
  /// with the next batch).
  /// @throws timeout_error naming the late sample (the batch is not consumed: call again to
  /// keep waiting).
  /// @throws logic_error if every slot is leased to live batches, so none can be filled.
  /// @throws cuda_error (CUDA path) naming the batch's sequence and epoch when the consumer's
  /// stream cannot be made to wait for it (the batch is consumed, not delivered), or when a
  /// worker's copy failed (the loader cannot go on: every later call throws it too).
  /// On the CUDA path it makes the consumer stream (`loader_options::consumer_stream`) wait
  /// for the batch's copy without blocking the host; the host blocks only until the batch's
  /// samples are read and its copy is queued.
  [[nodiscard]] std::optional<batch> next();
  /// @brief As `next()`, on the CUDA path with `consumer` as the stream the batch is used on
  /// (it overrides `loader_options::consumer_stream` for this batch).
  [[nodiscard]] std::optional<batch> next(stream_view consumer);
  /// @brief As `next()`, but blocks the host for at most `max_wait` (0: not at all): when the
  /// batch is not ready by then it returns `status::pending` and consumes nothing, so that a
  /// caller can check for an interrupt and call again. `loader_options::timeout` and the stall
  /// warnings count from the first call of such a series, not from each call.
  /// @throws as next() does.
  [[nodiscard]] next_result try_next_for(std::chrono::milliseconds max_wait);
  /// @brief As `try_next_for(max_wait)`, with `consumer` as next(stream_view) takes it.
  [[nodiscard]] next_result try_next_for(std::chrono::milliseconds max_wait, stream_view consumer);

  /// @brief Batches per epoch for this rank (with a given order: of the current epoch's order,
  /// 0 before one is given; 0 for a Python IterableDataset, whose epochs end when its workers'
  /// iterators do).
  [[nodiscard]] std::size_t batches_per_epoch() const;
  /// @brief Optimizer steps per epoch for this rank (as batches_per_epoch for a given order).
  [[nodiscard]] std::size_t steps_per_epoch() const;
  /// @brief Samples per epoch for this rank, before skips (as batches_per_epoch for a given
  /// order).
  [[nodiscard]] std::size_t samples_per_epoch() const;
  /// @brief With the builtin order: this rank's dataset indices of `epoch`, in the order they
  /// are delivered, and the size of each batch (what the workers read, before any skip): for
  /// audits, and for samplers that mirror the loader's order. Computes the order (O(samples)).
  /// @throws logic_error when the caller gives the order (`sample_order::given`).
  [[nodiscard]] epoch_order builtin_order(std::uint64_t epoch) const;
  /// @brief Bytes of one full batch.
  [[nodiscard]] std::size_t batch_bytes() const;
  /// @brief The options in force (rank and world size resolved).
  [[nodiscard]] loader_options const& options() const;
  /// @brief What the loader logs at `info` when its ring is allocated, one line each: this
  /// rank's share and batches per epoch, the workers, the ring's memory, the autotuner's start.
  /// Empty while the layout is being learned from the first sample
  /// (`dataset::layout_from_first_sample`); never waits.
  [[nodiscard]] std::string plan() const;

  /// @brief Where the consumer stands now.
  [[nodiscard]] loader_state state() const;
  /// @brief Resumes at `state`: the following batches are exactly those that followed it.
  /// @throws logic_error if the state was taken with another dataset size, batch size, seed,
  /// shuffle, chunk_window or rank layout, or points past the epoch.
  void restore(loader_state const& state);

  /// @brief The counters. Safe from any thread.
  [[nodiscard]] stats snapshot() const;

  /// @brief Writes the stage spans recorded so far (the last `loader_options::trace_events`) as
  /// a Trace Event Format JSON object, which chrome://tracing and ui.perfetto.dev open: one
  /// track per worker and one for the consumer. Safe from any thread, while the loader runs;
  /// never waits (before the first batch's layout is learned, the trace has no spans).
  /// @throws logic_error when `loader_options::trace_events` is 0 (tracing is off).
  void write_trace(std::ostream& out) const;
  /// @brief As `write_trace(std::ostream&)`, into the file at `path` (replaced if it exists).
  /// @throws file_error when the file cannot be written.
  void write_trace(std::filesystem::path const& path) const;

  /// @brief Input iterator over one epoch; owns the current batch until it advances.
  using iterator = detail::epoch_iterator<loader, batch>;
  /// @brief Starts (or continues) the current epoch.
  iterator begin() { return iterator{this}; }
  std::default_sentinel_t end() noexcept { return {}; }

 private:
  std::unique_ptr<detail::loader_front> front_;
};

}  // namespace gpufeed
