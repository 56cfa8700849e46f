#include "core/consumer_side.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

#include "core/nvtx.hpp"
#include "core/units.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/log.hpp"

namespace gpufeed::detail {

namespace {
std::int64_t to_ns(consumer_side::clock::time_point t) noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// Marks the consumer as blocked while it waits: workers wake it only then (a wake-up is a
// system call).
class waiting_flag {
 public:
  explicit waiting_flag(bool& flag) noexcept : flag_{flag} { flag_ = true; }
  ~waiting_flag() { flag_ = false; }
  waiting_flag(waiting_flag const&) = delete;
  waiting_flag& operator=(waiting_flag const&) = delete;

 private:
  bool& flag_;
};
}  // namespace

consumer_side::consumer_side(std::mutex& mutex, ring& slots, epoch_source const& epochs,
                             loader_metrics& metrics, worker_pool const& pool,
                             loader_options const& options) noexcept
    : mutex_{mutex},
      ring_{slots},
      epochs_{epochs},
      metrics_{metrics},
      pool_{pool},
      options_{options} {}

// ---- workers ------------------------------------------------------------------------------------

void consumer_side::publish(slot& s) {
  bool wake = false;
  {
    std::lock_guard const lock{mutex_};
    wake = ring_.complete(s) && waiting_;
  }
  if (wake) {
    ready_cv_.notify_one();  // one consumer thread
  }
}

void consumer_side::fail(std::exception_ptr error) noexcept {
  {
    std::lock_guard const lock{mutex_};
    if (!fatal_) {
      fatal_ = std::move(error);
    }
  }
  ready_cv_.notify_all();
}

void consumer_side::rethrow_if_failed_locked() const {
  if (fatal_) {
    std::rethrow_exception(fatal_);
  }
}

// ---- the consumer -------------------------------------------------------------------------------

found_batch consumer_side::wait(std::unique_lock<std::mutex>& lock, clock::time_point give_up_at,
                                ring_room& room) {
  rethrow_if_failed_locked();
  auto const at = ring_.consumer();
  if (epochs_.plan(at.epoch) == nullptr) {
    throw logic_error{"next(): loader_options::order is sample_order::given and epoch " +
                      std::to_string(at.epoch) +
                      " has no order yet; give it first with set_epoch(" +
                      std::to_string(at.epoch) + ", order)"};
  }
  if (ring_.step_past_epoch_end()) {
    pending_since_.reset();
    return {next_result::status::end_of_epoch, nullptr, {}, {}};
  }
  // A wait that an earlier try_next_for left pending goes on: the timeout counts from its start.
  if (!pending_since_) {
    pending_since_ = clock::now();
    warn_at_ = *pending_since_ + options_.stall_warning;
  }
  auto const wait_from = *pending_since_;
  auto const deadline =
      options_.timeout.count() > 0 ? wait_from + options_.timeout : clock::time_point::max();
  slot* s = ring_.consumer_slot();
  std::optional<nvtx_range> wait_range;
  while (s == nullptr || s->status != slot::state::ready) {
    // An open-ended epoch's length is learned while the consumer waits past its last batch.
    if (s == nullptr && ring_.step_past_epoch_end()) {
      pending_since_.reset();
      return {next_result::status::end_of_epoch, nullptr, {}, {}};
    }
    if (!wait_range) {
      wait_range.emplace("gpufeed: consumer wait");
    }
    if (s == nullptr && ring_.all_leased()) {
      room.make_room(lock);  // or throws: never waits for a slot nobody will free
      rethrow_if_failed_locked();
      s = ring_.consumer_slot();
      continue;
    }
    if (clock::now() >= give_up_at) {
      return {next_result::status::pending, nullptr, {}, {}};  // not consumed; the wait goes on
    }
    waiting_flag const waiting{waiting_};
    if (ready_cv_.wait_until(lock, std::min({deadline, warn_at_, give_up_at})) ==
        std::cv_status::timeout) {
      auto const later = clock::now();
      if (later >= deadline) {
        auto [index, why] = describe_wait_locked(ring_.consumer_slot());
        pending_since_.reset();
        lock.unlock();
        metrics_.timed_out({to_ns(wait_from), to_ns(later), at});
        throw timeout_error{
            index, "gpufeed: timeout after " + std::to_string(options_.timeout.count()) +
                       " ms waiting for batch " + std::to_string(at.sequence) + " of epoch " +
                       std::to_string(at.epoch) + ": " + why +
                       ". Call next() again to keep waiting, or raise loader_options::timeout"};
      }
      if (later >= warn_at_) {
        auto const why = describe_wait_locked(ring_.consumer_slot()).second;
        auto const waited = std::chrono::duration<double>(later - wait_from).count();
        warn_at_ = later + options_.stall_warning;
        lock.unlock();  // no log call under the loader's mutex
        logger()->warn("next() has waited {:.0f} s for batch {} of epoch {}: {}", waited,
                       at.sequence, at.epoch, why);
        lock.lock();
      }
    }
    rethrow_if_failed_locked();
    s = ring_.consumer_slot();
  }
  pending_since_.reset();
  return {next_result::status::ready, s, {to_ns(wait_from), steady_ns(), at}, ring_.occupancy()};
}

std::pair<std::size_t, std::string> consumer_side::describe_wait_locked(slot const* s) const {
  if (s == nullptr) {
    auto const at = ring_.consumer();
    auto const index = epochs_.index(at.epoch, epochs_.plan(at.epoch)->span(at.sequence).first);
    auto const o = ring_.occupancy();
    auto const slots = "the ring's " + std::to_string(ring_.size()) +
                       " slots: " + std::to_string(o.leased) + " leased to live batches, " +
                       std::to_string(o.ready) + " ready, " + std::to_string(o.filling) +
                       " filling, " + std::to_string(o.free) + " free";
    return {index, "its first sample " + std::to_string(index) + " has not started (" + slots +
                       (o.free > 0 ? "; no worker has taken the free slot yet)" : ")")};
  }
  // The read in progress on this batch that started first is the one everybody waits for.
  if (auto const oldest = metrics_.oldest_read_on(s)) {
    auto const busy_ms = (steady_ns() - oldest->since_ns) / 1'000'000;
    return {oldest->index, "sample " + std::to_string(oldest->index) +
                               " has been reading on worker " + std::to_string(oldest->worker) +
                               " for " + std::to_string(busy_ms) + " ms"};
  }
  auto const claimed = std::min(s->claims.next.load(), s->count);
  auto const position = claimed < s->count ? claimed : s->count - 1;
  auto const index = epochs_.index(s->order.get(), s->at.epoch, s->first_position + position);
  return {index, "sample " + std::to_string(index) + " is waiting for a worker (all " +
                     std::to_string(pool_.active_locked()) + " are busy with other batches)"};
}

}  // namespace gpufeed::detail
