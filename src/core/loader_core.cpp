#include "core/loader_core.hpp"

#include <spdlog/spdlog.h>

#include <string>
#include <utility>

#include "core/plan_log.hpp"
#include "core/units.hpp"
#include "gpufeed/detail/adapted_dataset.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/log.hpp"

namespace gpufeed::detail {

namespace {
std::unique_ptr<device_stage> stage_for(slot_layout const& layout, ring_plan const& sizes,
                                        loader_options const& options,
                                        std::shared_ptr<host_memory_source> const& host_memory,
                                        stage_factory const& make_stage) {
  if (options.target != placement::cuda) {
    return nullptr;
  }
  return make_stage
             ? make_stage(layout, sizes.tuning.slots, sizes.max_slots, options)
             : make_cuda_stage(layout, sizes.tuning.slots, sizes.max_slots, options, host_memory);
}

std::shared_ptr<host_memory_source> host_memory_of(dataset const& data) {
  auto const* a = adapted(data);
  return a != nullptr ? a->host_memory() : nullptr;
}

// The sources of an open-ended dataset's epochs (0: its epochs have size() samples), checked.
std::size_t sources_of(dataset const& data) {
  auto const sources = open_ended_sources(data);
  GPUFEED_EXPECTS(sources == 0 || adapted(data)->reads_whole_batches(),
                  "an open-ended dataset (open_ended_sources() = " + std::to_string(sources) +
                      ") must read whole batches (reads_whole_batches()): a batch is made whole "
                      "or ends with its source");
  return sources;
}

std::vector<std::unique_ptr<slot>> make_slots(std::size_t count, slot_layout const& layout,
                                              device_path const& device,
                                              host_memory_source* source) {
  std::vector<std::unique_ptr<slot>> slots;
  slots.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    slots.push_back(make_slot(i, slot_host_memory(i, layout, device, source), layout));
  }
  return slots;
}
}  // namespace

loader_core::loader_core(std::shared_ptr<dataset const> data, loader_options options,
                         stage_factory const& make_stage)
    : loader_core(data, std::move(options), data->spec(), {}, make_stage) {}

loader_core::loader_core(std::shared_ptr<dataset const> data, loader_options options,
                         sample_spec spec, std::vector<staged_read> staged,
                         stage_factory const& make_stage)
    : data_{std::move(data)},
      host_memory_{host_memory_of(*data_)},
      options_{std::move(options)},
      layout_{std::move(spec), options_.batch_size},
      sizes_{plan_ring(layout_, options_)},
      sources_{sources_of(*data_)},
      epochs_{sources_ > 0 ? 0 : data_->size(),
              options_.chunk_window > 0 ? data_->storage_chunk() : 0, options_, sources_ > 0},
      metrics_{sizes_.tuning.threads, options_.trace_events, options_.max_listed_skips},
      device_{stage_for(layout_, sizes_, options_, host_memory_, make_stage)},
      ring_{epochs_,
            make_slots(sizes_.tuning.slots, layout_, device_, host_memory_.get()),
            sizes_.max_slots,
            sizes_.tuning.start_depth,
            adapted(*data_) != nullptr && adapted(*data_)->reads_whole_batches(),
            sources_},
      held_{layout_, sizes_.footprint, host_memory_.get()},
      staged_{std::move(staged)},
      pool_{mutex_, sizes_.tuning.threads, sizes_.tuning.start_workers},
      consumer_{mutex_, ring_, epochs_, metrics_, pool_, options_},
      tuner_{options_, sizes_.tuning},
      filler_{*data_,
              layout_,
              options_,
              epochs_,
              device_,
              metrics_,
              pool_.stop_flag(),
              staged_,
              sizes_.tuning.threads} {
  plan_ = log_loader_plan(*data_, layout_, options_, epochs_, sizes_);
}

loader_core::~loader_core() {
  stop();
}

void loader_core::start() {
  pool_.start(*this);
}

void loader_core::stop() noexcept {
  pool_.stop();
  consumer_.wake();
}

// ---- workers ------------------------------------------------------------------------------------

bool loader_core::prepare_thread(unsigned worker) noexcept {
  try {
    device_.bind_worker_thread(worker);
    return true;
  } catch (...) {
    consumer_.fail(std::current_exception());
    return false;
  }
}

slot* loader_core::take_work_locked() {
  slot* s = ring_.unclaimed();
  if (s == nullptr && (s = ring_.start_next(pool_.active_locked())) != nullptr) {
    pool_.work_appeared_locked();  // more hands for the new batch
  }
  if (s != nullptr) {
    ring_.attach(*s);
  }
  return s;
}

void loader_core::work_on(slot& s, unsigned worker) noexcept {
  try {
    if (filler_.fill(s, worker)) {
      consumer_.publish(s);
    }
  } catch (...) {
    consumer_.fail(std::current_exception());  // a CUDA failure: no batch can carry it
  }
}

// ---- the consumer -------------------------------------------------------------------------------

std::optional<stream_view> loader_core::consumer_stream(std::optional<stream_view> given) const {
  if (!device_.active()) {
    return std::nullopt;
  }
  auto stream = given ? given : options_.consumer_stream;
  GPUFEED_EXPECTS(stream.has_value(),
                  "next() on the CUDA path needs the stream your training step runs on: set "
                  "loader_options::consumer_stream, or call next(gpufeed::stream_view{stream})");
  return stream;
}

next_result loader_core::next(std::optional<stream_view> consumer, clock::time_point give_up_at) {
  auto const stream = consumer_stream(consumer);
  std::unique_lock lock{mutex_};
  auto found = consumer_.wait(lock, give_up_at, *this);
  // An open-ended epoch's batches that a source could not make are passed over, in order; past
  // the last one, the wait says end of epoch once every source has ended.
  while (found.what == next_result::status::ready && found.ready->ended) {
    ring_.discard(*found.ready);
    if (pool_.slot_freed_locked()) {
      lock.unlock();
      pool_.wake_one();
      lock.lock();
    }
    found = consumer_.wait(lock, give_up_at, *this);
  }
  if (found.what == next_result::status::end_of_epoch && epochs_.open_ended()) {
    pool_.work_appeared_locked();  // the consumer stands in the next epoch: it may start now
  }
  if (found.what != next_result::status::ready) {
    return {found.what, std::nullopt};
  }
  auto& s = *found.ready;
  if (s.error) {  // a failed sample under error_policy::raise: the batch is consumed, not delivered
    auto error = std::exchange(s.error, nullptr);
    ring_.discard(s);
    bool const wake = pool_.slot_freed_locked();
    lock.unlock();
    if (wake) {
      pool_.wake_one();
    }
    metrics_.raised(found.wait, found.seen);
    std::rethrow_exception(error);
  }
  ring_.hand_out(s);
  tuned_settings const in_force{pool_.active_locked(), ring_.depth()};
  lock.unlock();
  s.handed = lease{s.id,      s.at.epoch,  s.at.sequence,
                   s.step,    s.delivered, s.indices.data(),
                   s.skipped, s.memory,    device_.device_memory(s.id)};
  if (stream) {
    try {
      device_.hand_off(s.handed, *stream);
    } catch (...) {
      release(s.handed);
      metrics_.raised(found.wait, found.seen);
      throw;
    }
  }
  metrics_.delivered(found.wait, found.seen, s.handed);
  if (tuner_.enabled()) {
    if (auto const d = tuner_.after_delivery(found.wait.to_ns, metrics_, in_force)) {
      apply({d->workers, d->depth}, d->reason);
    }
  }
  return {next_result::status::ready, lease_access::make(shared_from_this(), &s.handed)};
}

void loader_core::make_room(std::unique_lock<std::mutex>& lock) {
  if (tuner_.tunes_depth() && ring_.depth() < ring_.size()) {
    // The consumer holds every slot in use: an automatic depth makes room for one more.
    auto const held = ring_.count(slot::state::leased);
    auto const line = apply_locked(
        {pool_.active_locked(), ring_.depth() + 1},
        "the consumer holds " + std::to_string(held) + " batches at once, every slot in use");
    lock.unlock();  // no log call under the loader's mutex
    logger()->info("{}", line);
    lock.lock();
    return;
  }
  if (!held_.grow(lock, ring_, device_)) {
    throw held_.refusal(ring_);
  }
  pool_.work_appeared_locked();
}

void loader_core::apply(tuned_settings to, std::string const& reason) {
  std::unique_lock lock{mutex_};
  auto const line = apply_locked(to, reason);
  lock.unlock();
  logger()->info("{}", line);
}

std::string loader_core::apply_locked(tuned_settings to, std::string const& reason) {
  tuned_settings const before{pool_.active_locked(), ring_.depth()};
  auto line = tuner_.change(before, to, reason, metrics_.batches());
  if (to.workers != before.workers) {
    pool_.set_active_locked(to.workers);
  }
  if (to.depth != before.depth) {
    ring_.deepen(to.depth);
    pool_.work_appeared_locked();  // a slot more to fill
  }
  return line;
}

// ---- leases -------------------------------------------------------------------------------------

void loader_core::release(lease const& held) noexcept {
  device_.release(held.slot);  // before the slot is free: its next copy must wait for this
  bool wake = false;
  {
    std::lock_guard const lock{mutex_};
    ring_.release(ring_.at(held.slot));
    wake = pool_.slot_freed_locked();
  }
  if (wake) {
    pool_.wake_one();  // one worker is enough: it takes the slot and wakes others to fill it
  }
}

void loader_core::use_on(lease const& held, stream_view stream) {
  device_.use_on(held, stream);
}

// ---- positioning --------------------------------------------------------------------------------

void loader_core::set_epoch(std::uint64_t epoch) {
  std::lock_guard const lock{mutex_};
  if (ring_.consumer() == cursor{epoch, 0}) {
    return;
  }
  // Past the last batch of epoch - 1 the producer is already on `epoch`: keep what it prepared.
  // An open-ended epoch starts only once the consumer stands in it: now, even when kept.
  if (ring_.enter_epoch(epoch, ring_.at_start_of(epoch)) || epochs_.open_ended()) {
    pool_.work_appeared_locked();
  }
  consumer_.forget_pending_locked();
}

void loader_core::set_epoch(std::uint64_t epoch, epoch_order order) {
  auto given = epochs_.make_order(epoch, std::move(order));  // checked and cut: O(order size)
  std::lock_guard const lock{mutex_};
  // Nothing of `epoch` can have been prepared before its first order: the producer waits at its
  // start. A second order for the same epoch discards what the first one prepared. Whether the
  // consumer stands at the epoch's start is judged by the plans before the new order.
  bool const at_start = ring_.at_start_of(epoch);
  bool const first = epochs_.give(std::move(given));
  (void)ring_.enter_epoch(epoch, first && at_start && ring_.producer() == cursor{epoch, 0});
  consumer_.forget_pending_locked();
  pool_.work_appeared_locked();  // the workers may start the epoch now
}

std::uint64_t loader_core::epoch() const {
  std::lock_guard const lock{mutex_};
  return ring_.consumer().epoch;
}

loader_state loader_core::state() const {
  epochs_.expect_resumable("state()");
  std::lock_guard const lock{mutex_};
  return epochs_.state_at(ring_.consumer());
}

void loader_core::restore(loader_state const& wanted) {
  epochs_.expect_resumable("restore()");
  epochs_.expect_same_fingerprint(wanted);
  std::lock_guard const lock{mutex_};
  cursor const to = epochs_.restore_point(wanted);
  if (ring_.consumer() != to) {
    ring_.flush(to);
    consumer_.forget_pending_locked();
    pool_.work_appeared_locked();
  }
}

loader_core::plan_sizes loader_core::current_plan_sizes() const {
  std::lock_guard const lock{mutex_};
  auto const* plan = epochs_.plan(ring_.consumer().epoch);
  if (plan == nullptr || epochs_.open_ended()) {
    return {};  // not known: no order given yet, or an open-ended epoch
  }
  return {plan->batches(), plan->steps(), plan->samples()};
}

// ---- the snapshot -------------------------------------------------------------------------------

stats loader_core::snapshot() const {
  stats out;
  metrics_.add_to(out);  // its own lock, never under the loader's mutex
  device_.add_to(out);
  out.slot_bytes = layout_.slot_bytes();
  out.bytes = out.samples * layout_.spec().bytes_per_sample();
  out.autotuned = tuner_.enabled();
  out.autotune_changes = tuner_.changes();
  out.autotune_last_change_batch = tuner_.last_change_batch();
  std::lock_guard const lock{mutex_};
  auto const occupancy = ring_.occupancy();
  out.ring_capacity = ring_.size();
  out.host_bytes = layout_.slot_bytes() * ring_.size();
  out.bookkeeping_bytes = (sizes_.footprint - layout_.slot_bytes()) * ring_.size();
  out.ring_grown = ring_.grown();
  out.ring_max_slots = ring_.max_slots();
  out.workers = pool_.active_locked();
  out.ring_slots = ring_.depth();
  out.ring_ready = occupancy.ready;
  out.ring_leased = occupancy.leased;
  return out;
}

}  // namespace gpufeed::detail
