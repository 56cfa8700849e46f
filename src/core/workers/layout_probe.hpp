#pragma once
// Learning the batch layout from the first sample, for datasets that cannot give it without
// reading (adapted_dataset::layout_from_first_sample). Before the loader's core exists, the probe's
// threads stage the first samples of the batch the consumer will ask for first, one per thread
// (so that reads which wait for each other, such as a barrier across workers, all run), and the
// first sample read gives the layout. Nothing is read on the thread that makes the loader. The
// loader then builds its core with that layout and hands it every staged read (dataset::stage),
// so that no sample is read twice and a failed one is reported as its batch's, as any read's.
//
// Where the consumer stands before the core exists (set_epoch, a given order, restore) is kept
// here, and replayed on the core (replay_on).
//
// Under error_policy::raise, a first batch whose every sample fails is that batch's sample_error,
// delivered once to the consumer, which then stands at the next batch, as after any failed
// batch; an epoch whose every batch failed so ends as any epoch does. Under skip, the probe
// fails, and the loader with it, once every sample of the epoch failed. Either sample_error
// names the samples.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/epochs/epoch_source.hpp"
#include "core/ring/cursor.hpp"
#include "core/workers/staged_reads.hpp"
#include "gpufeed/dataset.hpp"
#include "gpufeed/detail/adapted_dataset.hpp"
#include "gpufeed/epoch_order.hpp"
#include "gpufeed/loader_state.hpp"
#include "gpufeed/options.hpp"

namespace gpufeed::detail {

class loader_core;

class layout_probe {
 public:
  using clock = std::chrono::steady_clock;

  /// `options` resolved and validated. Starts `threads` threads staging the start of epoch 0
  /// (with a given order: once one is given).
  layout_probe(std::shared_ptr<adapted_dataset const> data, loader_options const& options,
               unsigned threads);
  /// Stops the threads and joins them (a read in progress sees read_context::stop_requested).
  ~layout_probe();
  layout_probe(layout_probe const&) = delete;
  layout_probe& operator=(layout_probe const&) = delete;

  // The consumer's position, before the core exists (as loader_core's functions of the same
  // names). A change discards what was staged for the old position and stages the new one.
  void set_epoch(std::uint64_t epoch);
  void set_epoch(std::uint64_t epoch, epoch_order order);
  void restore(loader_state const& state);
  [[nodiscard]] std::uint64_t epoch() const;
  [[nodiscard]] loader_state state() const;
  /// Batches, steps and samples of the consumer's epoch (zeros while its order is not given).
  struct plan_sizes {
    std::size_t batches = 0;
    std::size_t steps = 0;
    std::size_t samples = 0;
  };
  [[nodiscard]] plan_sizes current_plan_sizes() const;
  /// As loader_core::builtin_order.
  [[nodiscard]] epoch_order builtin_order(std::uint64_t epoch) const {
    return epochs_.builtin_order(epoch);
  }
  /// Staged reads made so far (successes and failures), for the statistics.
  [[nodiscard]] std::size_t staged_count() const;

  enum class wait_result : std::uint8_t { learned, timed_out, epoch_over };
  /// Waits until the layout is learned and the reads in progress have returned (learned), or
  /// until `give_up_at` (timed_out). For the `consumer` (next()), also until the epoch ended
  /// without a layout (epoch_over, once; the consumer then stands at the next epoch).
  /// @throws sample_error when no sample could give the layout; or, under raise, the failure of
  /// the consumer's first batch (for the consumer, once: it then stands at the next batch).
  [[nodiscard]] wait_result wait(clock::time_point give_up_at, bool consumer);

  /// What the probe learned: call once, after wait() returned true. Tells the dataset which
  /// staged sample gave the layout (adapted_dataset::layout_chosen); the threads have ended.
  struct learned {
    sample_spec spec;
    std::vector<staged_read> staged;
  };
  [[nodiscard]] learned take();
  /// Brings `core` (new, not started) to where the consumer stands here.
  void replay_on(loader_core& core) const;

 private:
  void run(unsigned thread);
  /// The next shard position to stage, or nullopt when there is none for now. Under mutex_.
  [[nodiscard]] std::optional<std::size_t> next_position_locked();
  /// The consumer moved: staged reads of the old position go. Under mutex_.
  void restart_locked(cursor at);
  /// Whether the reads so far prove that no sample can give the layout. Under mutex_.
  void check_exhausted_locked();

  std::shared_ptr<adapted_dataset const> data_;
  loader_options options_;
  epoch_source epochs_;  // its own: the core makes another from the same inputs
  unsigned threads_wanted_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;  // position, staged reads, in-flight reads, stop
  cursor at_;
  std::optional<epoch_order> order_;  // the last order given, for replay_on
  std::uint64_t order_epoch_ = 0;
  std::uint64_t generation_ = 0;        // bumped when the position changes
  std::size_t next_ = 0;                // the next shard position to stage
  std::size_t end_ = 0;                 // the end of the epoch's positions
  std::size_t first_ = 0;               // the first shard position of the consumer's first batch
  std::size_t first_batch_ = 0;         // samples in the consumer's first batch
  std::vector<staged_read> staged_;     // this generation's
  std::size_t failed_ = 0;              // staged failures of this generation
  std::size_t failed_first_batch_ = 0;  // those of the consumer's first batch
  std::optional<sample_spec> spec_;     // the layout, once learned
  bool choosing_ = false;               // a thread is telling the dataset its layout was chosen
  std::exception_ptr failure_;          // no sample can give the layout, or a worker_error
  std::exception_ptr batch_failure_;    // under raise: the consumer's first batch failed wholly
  bool epoch_over_ = false;             // the consumer's epoch ended with that batch
  unsigned reading_ = 0;                // threads inside stage()
  bool taken_ = false;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace gpufeed::detail
