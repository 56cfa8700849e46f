#pragma once
// The ring: the slots, the producer's and the consumer's cursors, the generation, and every change
// of a slot's state. No threads and no waiting: the loader calls each function under its mutex,
// and tests/ring_test.cpp drives the ring alone.
//
// The life of a slot:
//
//   free ──start_next──► filling ──complete──► ready ──hand_out──► leased ──release──► free
//                           │                    │
//                           └──────flush─────────┴──► free (cancelled)
//                                          ready ──discard──► free (a batch that raised)
//
// Rules (violation() checks them all; builds without NDEBUG assert them after every change):
//   1. the count of slots in each state is counted right (count() is O(1));
//   2. there are at most max_slots() slots, slot i has id i, and 1 <= depth() <= size();
//   3. only slots of the active depth are ever started: the others are free (the depth grows,
//      never shrinks);
//   4. filling and ready slots belong to the current generation and hold distinct batches, each
//      in [consumer, producer): a flush (set_epoch, restore) frees them and starts a generation;
//      leased slots stay leased;
//   5. the consumer takes batches in plan order: the slot it hands out or discards holds the
//      batch at the consumer's cursor, and a slot is started only when no worker is attached to
//      it, so that a worker never sees its batch change under it.
//
// An open-ended epoch (epoch_source::open_ended) has no last batch in its plan: the producer
// plans batch after batch until every source has ended (a batch whose claim a source could not
// make is `ended`). The producer's sequence then is the epoch's length: the producer moves to
// the next epoch, and the consumer, having taken (or passed over) every batch before, steps past
// the end as it does at a planned epoch's. No batch of the next open-ended epoch starts before
// the consumer stands in it: its sources start it when first asked, and must not have begun an
// epoch that set_epoch then leaves for another, or reads anew.
//
// The CUDA path adds its copy between the last sample and `ready`, and its release event between
// `leased` and `free` (device_path.hpp); the ring does not see them.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/epochs/epoch_source.hpp"
#include "core/ring/cursor.hpp"
#include "core/ring/slot.hpp"

namespace gpufeed::detail {

/// How many slots are in each state.
struct ring_occupancy {
  std::size_t ready = 0;
  std::size_t leased = 0;
  std::size_t filling = 0;
  std::size_t free = 0;
};

class ring {
 public:
  /// A ring of `slots` (slot i with id i), `depth` of them in use at first, that may grow to
  /// `max_slots` slots. Its storage is reserved for max_slots at once: growing never moves a slot
  /// (workers hold slot pointers).
  /// `whole_batches`: every claim is a whole batch (adapted_dataset::reads_whole_batches).
  /// `sources`: an open-ended epoch's (epochs.open_ended()), at least 1.
  ring(epoch_source const& epochs, std::vector<std::unique_ptr<slot>> slots, std::size_t max_slots,
       std::size_t depth, bool whole_batches = false, std::size_t sources = 0);

  // ---- workers ----
  /// The slot of the earliest batch that still has samples to claim, or null. The earliest first:
  /// many workers finish one batch fast, and it is the one the consumer wants next.
  [[nodiscard]] slot* unclaimed() const noexcept;
  /// Starts the producer's next batch in a free slot of the active depth that no worker is
  /// attached to, with claims sized for `workers` active workers; the producer moves on. Null
  /// when no slot is free, or there is nothing to start (no batches, an epoch whose order is
  /// not given yet, or an open-ended epoch the consumer has not reached).
  [[nodiscard]] slot* start_next(unsigned workers);
  /// A worker starts working on `s`.
  void attach(slot& s) noexcept;
  /// A worker leaves `s`. True when it was the last one on a free slot: the slot can be started
  /// again now (it was discarded, or released, while a worker was still on it).
  [[nodiscard]] bool detach(slot& s) noexcept;
  /// filling -> ready, once its last sample is read (and its copy queued). False when the batch
  /// was discarded meanwhile (set_epoch / restore): the slot is free already. A batch that is
  /// `ended` (an open-ended epoch's source had none) becomes ready too, for the consumer to pass
  /// over in order; when its source is the last of the producer's epoch to end, the epoch's
  /// length is known and the producer moves to the next epoch.
  [[nodiscard]] bool complete(slot& s) noexcept;

  // ---- consumer ----
  [[nodiscard]] cursor consumer() const noexcept { return consumer_; }
  [[nodiscard]] cursor producer() const noexcept { return producer_; }
  /// The slot holding the consumer's batch (filling or ready), or null when it has not started.
  [[nodiscard]] slot* consumer_slot() const noexcept;
  /// When the consumer has taken the last batch of its epoch (whose plan, or whose end when
  /// open-ended, must be known), moves it to the start of the next epoch and returns true.
  [[nodiscard]] bool step_past_epoch_end() noexcept;
  /// ready -> leased: the consumer takes its batch and moves on.
  void hand_out(slot& s) noexcept;
  /// ready -> free: the consumer's batch raised instead (a failed sample), or is `ended`; the
  /// consumer moves on.
  void discard(slot& s) noexcept;
  /// leased -> free: the batch's holder gave it back.
  void release(slot& s) noexcept;

  // ---- positioning ----
  /// Whether the consumer stands at the start of `epoch`, or just past the last batch of the epoch
  /// before it (per that epoch's plan as it is now).
  [[nodiscard]] bool at_start_of(std::uint64_t epoch) const noexcept;
  /// Moves the consumer to the start of `epoch`. With `keep` (the producer is on that epoch
  /// already) what was prepared stays; otherwise everything being prepared is discarded (flush).
  /// Returns true when it flushed.
  bool enter_epoch(std::uint64_t epoch, bool keep) noexcept;
  /// Discards every batch being prepared or ready (filling/ready -> free, cancelled; leases stay),
  /// starts a new generation, and puts both cursors at `to`.
  void flush(cursor to) noexcept;

  // ---- depth and growth ----
  [[nodiscard]] std::size_t size() const noexcept { return slots_.size(); }
  [[nodiscard]] std::size_t max_slots() const noexcept { return max_slots_; }
  /// Slots in use: slots [depth(), size()) are never started.
  [[nodiscard]] std::size_t depth() const noexcept { return depth_; }
  /// Raises the depth in use (autotuning) to `depth` (<= size()).
  void deepen(std::size_t depth) noexcept;
  /// Slots added because every slot was leased (held batches).
  [[nodiscard]] std::size_t grown() const noexcept { return grown_; }
  /// Whether every slot of the active depth is leased to a live batch.
  [[nodiscard]] bool all_leased() const noexcept;
  /// Whether no slot of the active depth is free (a worker with nothing to do waits for a slot).
  [[nodiscard]] bool depth_full() const noexcept;
  /// Whether a slot may be added: the ring is below max_slots() and uses all its slots.
  [[nodiscard]] bool may_grow() const noexcept;
  /// Adds slot `s` (its id must be size()) and uses it: the depth becomes size().
  void grow(std::unique_ptr<slot> s);

  [[nodiscard]] slot& at(std::size_t id) const noexcept { return *slots_[id]; }
  [[nodiscard]] std::size_t count(slot::state status) const noexcept {
    return counts_[static_cast<std::size_t>(status)];
  }
  [[nodiscard]] ring_occupancy occupancy() const noexcept;
  [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }
  /// The batches of `epoch`: its plan's, or an open-ended epoch's once every source has ended;
  /// nullopt while not known.
  [[nodiscard]] std::optional<std::size_t> batches_of(std::uint64_t epoch) const noexcept;

  /// The first rule above that does not hold, described; empty when all hold. O(slots log slots);
  /// allocates only to describe a broken rule.
  [[nodiscard]] std::string violation() const;

 private:
  void move(slot& s, slot::state to) noexcept;
  /// The consumer takes its ready batch in `s` (leased, or free again) and moves on.
  void take(slot& s, slot::state to) noexcept;
  /// Aborts with the broken rule (builds without NDEBUG only).
  void check() const noexcept;
  /// `c`, or the start of the next epoch when `c` is past the last batch of its epoch.
  [[nodiscard]] cursor normalized(cursor c) const noexcept;
  /// An open-ended epoch's source had no batch for `s`: counted once per source; the last one
  /// ends the producer's epoch.
  void source_ended(slot const& s) noexcept;
  /// Forgets which sources ended: the producer starts an epoch.
  void reset_sources() noexcept;

  epoch_source const& epochs_;
  std::vector<std::unique_ptr<slot>> slots_;
  std::size_t max_slots_;
  std::size_t depth_;
  bool whole_batches_;  // every claim a whole batch
  std::size_t grown_ = 0;
  std::array<std::size_t, 4> counts_{};  // per slot::state
  std::uint64_t generation_ = 0;
  cursor producer_;                       // the next batch to start
  cursor consumer_;                       // the next batch next() returns
  mutable std::vector<cursor> prepared_;  // violation()'s scratch, reserved for max_slots
  // Open-ended epochs: the sources that ended in the producer's epoch, and the length of each
  // ended epoch the consumer has not passed, as (epoch, batches), oldest first. Each such epoch
  // but the consumer's holds a planned batch in a slot: max_slots + 1 entries at most, reserved.
  std::vector<bool> source_ended_;
  std::size_t sources_ended_ = 0;
  std::vector<cursor> epoch_ends_;
};

}  // namespace gpufeed::detail
