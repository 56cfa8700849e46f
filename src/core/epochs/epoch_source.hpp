#pragma once
// Where each epoch's samples come from: the builtin order (a seeded permutation of (seed, epoch,
// rank, world_size) cut by one batch plan) or, with loader_options::order = sample_order::given,
// the order the caller gave for the epoch (set_epoch(epoch, order)), or, for an open-ended
// dataset (adapted_dataset::open_ended_sources), batches without an end: the epoch's length is
// learned when its sources end (the ring's, ring.hpp), and a position is only a place in it, not
// a sample's index. Also the loader_state
// fingerprint, since it is exactly what the builtin order depends on. No threads: the loader
// calls the functions that read or change the given order under its mutex.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/epochs/given_order.hpp"
#include "core/ring/cursor.hpp"
#include "gpufeed/batch_plan.hpp"
#include "gpufeed/epoch_order.hpp"
#include "gpufeed/loader_state.hpp"
#include "gpufeed/options.hpp"
#include "gpufeed/sampler.hpp"

namespace gpufeed::detail {

class epoch_source {
 public:
  /// `options` resolved and validated; `storage_chunk` is the dataset's (chunk-aware shuffle);
  /// `open_ended`: the dataset's epochs have no length known in advance (`dataset_size` unread).
  /// @throws logic_error when an open-ended epoch is asked for an order it cannot have
  /// (sample_order::given, shuffle).
  epoch_source(std::size_t dataset_size, std::size_t storage_chunk, loader_options const& options,
               bool open_ended = false);

  /// Whether each epoch's length is learned only when it ends (an iterable dataset).
  [[nodiscard]] bool open_ended() const noexcept { return open_ended_; }
  /// Whether the caller gives each epoch's order.
  [[nodiscard]] bool given() const noexcept { return options_.order == sample_order::given; }
  [[nodiscard]] sampler const& builtin() const noexcept { return sampler_; }
  [[nodiscard]] batch_plan const& builtin_plan() const noexcept { return plan_; }
  [[nodiscard]] std::size_t dataset_size() const noexcept { return sampler_.dataset_size(); }

  /// The plan of `epoch`: the builtin one, or the one cut from the order given for it; null
  /// while that order is not given. An open-ended epoch's plan has more batches than any epoch
  /// takes, each of batch_size places, every step whole: the ring ends the epoch.
  [[nodiscard]] batch_plan const* plan(std::uint64_t epoch) const noexcept;
  /// `c`, or the start of the next epoch when `c` is past the last batch of its epoch's plan.
  [[nodiscard]] cursor normalized(cursor c) const noexcept;
  /// The order the batches of `epoch` are filled from (a slot keeps it, so that a newer order
  /// never changes a batch being filled): the given one, or null for the builtin order.
  [[nodiscard]] std::shared_ptr<given_order const> order_of(std::uint64_t epoch) const noexcept;
  /// The dataset index at shard `position` of `epoch`, read from `order` (a slot's) or the
  /// builtin sampler. No lock needed: both are immutable.
  [[nodiscard]] std::size_t index(given_order const* order, std::uint64_t epoch,
                                  std::size_t position) const noexcept;
  /// The same for the current order of `epoch`. @throws logic_error when none is given.
  [[nodiscard]] std::size_t index(std::uint64_t epoch, std::size_t position) const;

  /// The builtin order of `epoch` for this rank, with its batch sizes (no lock needed: both
  /// are immutable). @throws logic_error when the caller gives the order.
  [[nodiscard]] epoch_order builtin_order(std::uint64_t epoch) const;

  /// Checks `order` and cuts it into batches (no lock needed).
  /// @throws logic_error when this loader makes its own order, or `order` does not fit.
  [[nodiscard]] std::shared_ptr<given_order const> make_order(std::uint64_t epoch,
                                                              epoch_order order) const;
  /// Makes `order` the current one. Returns whether it is the first order of its epoch.
  bool give(std::shared_ptr<given_order const> order) noexcept;

  /// The state of a consumer standing at `at`.
  [[nodiscard]] loader_state state_at(cursor at) const noexcept;
  /// @throws logic_error when the epochs are open-ended: no state can say where the sources
  /// stand. `call` names what the caller asked (state(), restore()).
  void expect_resumable(char const* call) const;
  /// @throws logic_error naming the first setting in which `saved` differs from this loader's.
  void expect_same_fingerprint(loader_state const& saved) const;
  /// Where `saved` resumes: its epoch's first unread batch. Throws logic_error when the epoch's
  /// order is not given yet or the batch is past the epoch's end. Under the loader's mutex.
  [[nodiscard]] cursor restore_point(loader_state const& saved) const;

 private:
  loader_options options_;
  bool open_ended_;
  sampler sampler_;
  batch_plan plan_;
  std::shared_ptr<given_order const> given_;  // sample_order::given: the latest epoch's order
};

}  // namespace gpufeed::detail
