#pragma once
// The consumer's side of the ring: next() and try_next_for() waiting for their batch, with the
// timeout, the stall warnings and the description of what they wait for, and the workers' side
// of the hand-off (a completed batch is published, a waiting consumer woken). What next() does
// with the batch it found (leasing it, the hand-off to the device, the metrics) is the loader's.
//
// Everything named *_locked expects the loader's mutex held.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "core/epochs/epoch_source.hpp"
#include "core/metrics/loader_metrics.hpp"
#include "core/ring/ring.hpp"
#include "core/workers/worker_pool.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/options.hpp"

namespace gpufeed::detail {

/// What next() does when every slot in use is leased to a live batch and none holds its batch.
class ring_room {
 public:
  virtual ~ring_room() = default;
  /// Makes room for the consumer's batch (a deeper ring in use, or one slot more). `lock` is held
  /// on entry and on return, and may be released meanwhile.
  /// @throws logic_error when there is no room to make, saying what is held and what to change.
  virtual void make_room(std::unique_lock<std::mutex>& lock) = 0;

 protected:
  ring_room() = default;
  ring_room(ring_room const&) = default;
  ring_room& operator=(ring_room const&) = default;
};

/// The batch a wait found, and how.
struct found_batch {
  next_result::status what = next_result::status::pending;
  slot* ready = nullptr;  // the consumer's batch, ready (status::ready only)
  consumer_wait wait;     // how long next() waited for it
  ring_occupancy seen;    // the ring when it was found
};

class consumer_side {
 public:
  using clock = std::chrono::steady_clock;

  consumer_side(std::mutex& mutex, ring& slots, epoch_source const& epochs, loader_metrics& metrics,
                worker_pool const& pool, loader_options const& options) noexcept;

  // ---- workers ----
  /// A worker completed `s`: it becomes ready, unless it was discarded meanwhile, and a waiting
  /// consumer wakes. Takes the mutex.
  void publish(slot& s);
  /// Records an error no batch can carry (a CUDA failure on a worker): next() throws it from now
  /// on, and workers stop. Takes the mutex.
  void fail(std::exception_ptr error) noexcept;
  [[nodiscard]] bool failed_locked() const noexcept { return fatal_ != nullptr; }

  // ---- the consumer ----
  /// Waits, with `lock` held, for the consumer's batch: until it is ready (status::ready), until
  /// `give_up_at` (status::pending: nothing consumed; the next call goes on with the same wait,
  /// its timeout and warnings counted from this one's start), or until loader_options::timeout
  /// (timeout_error naming the late sample; the batch is not consumed). status::end_of_epoch when
  /// the consumer has taken its epoch's last batch (an open-ended epoch's: once every source has
  /// ended): it then stands at the next epoch's start.
  /// Every loader_options::stall_warning it logs what it waits for (with the lock released).
  /// @throws the loader's fatal error; logic_error when the epoch's order is not given yet, or
  /// (from `room`) when every slot is leased and no room can be made.
  [[nodiscard]] found_batch wait(std::unique_lock<std::mutex>& lock, clock::time_point give_up_at,
                                 ring_room& room);
  /// The consumer moved (set_epoch, restore): a wait left pending is forgotten.
  void forget_pending_locked() noexcept { pending_since_.reset(); }
  /// Wakes a consumer blocked in wait() (the loader stops).
  void wake() noexcept { ready_cv_.notify_all(); }

 private:
  /// The sample the consumer's batch (in `s`, or not started when null) waits for, and a
  /// sentence about it.
  [[nodiscard]] std::pair<std::size_t, std::string> describe_wait_locked(slot const* s) const;
  void rethrow_if_failed_locked() const;

  std::mutex& mutex_;
  ring& ring_;
  epoch_source const& epochs_;
  loader_metrics& metrics_;
  worker_pool const& pool_;
  loader_options const& options_;
  std::condition_variable ready_cv_;  // a batch is ready, or the loader failed
  bool waiting_ = false;              // the consumer is blocked on ready_cv_
  std::exception_ptr fatal_;          // a failure no batch can carry
  // A wait for the batch at the consumer's cursor that try_next_for left pending: the timeout and
  // the stall warnings count from its start. Cleared when a batch is found or the cursor moves.
  std::optional<clock::time_point> pending_since_;
  clock::time_point warn_at_{};
};

}  // namespace gpufeed::detail
