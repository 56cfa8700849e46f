#include "gpufeed/detail/loader_core.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "gpufeed/detail/host_resources.hpp"
#include "gpufeed/detail/nvtx.hpp"
#include "gpufeed/detail/units.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/log.hpp"

namespace gpufeed::detail {

namespace {
std::int64_t nanoseconds_between(loader_core::clock::time_point from,
                                 loader_core::clock::time_point to) noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
}

double seconds(std::int64_t ns) noexcept {
  return static_cast<double>(ns) * 1e-9;
}

std::int64_t to_ns(loader_core::clock::time_point t) noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// The first spacing of stats::ring_history; it doubles each time the history fills.
constexpr std::int64_t ring_history_start_interval_ns = 10'000'000;

// The most slots a ring may have, grown or not (as loader_options::prefetch_depth's maximum).
constexpr std::size_t ring_slots_limit = 4096;

// The bytes the ring may take when batches are held: loader_options::held_batches_budget, else a
// quarter of physical memory (1 GiB when unknown), and never more than may be pinned.
std::size_t held_batches_budget(loader_options const& o) noexcept {
  if (o.held_batches_budget) {
    return *o.held_batches_budget;
  }
  auto const physical = physical_memory_bytes();
  auto budget = physical > 0 ? physical / 4 : std::size_t{1} << 30;
  if (o.target == placement::cuda) {
    if (auto const pinned = pinned_budget(o)) {
      budget = std::min(budget, *pinned);
    }
  }
  return budget;
}

// The slots a ring of `initial` slots of `slot_bytes` may grow to under `budget` bytes.
std::size_t held_batches_slots(std::size_t initial, std::size_t slot_bytes, std::size_t budget) {
  if (budget == 0) {
    return initial;
  }
  auto const fit = budget / std::max<std::size_t>(slot_bytes, 1);
  return std::max(initial, std::min(ring_slots_limit, fit));
}

// Wraps the exception being handled in a sample_error. Must be called inside a catch block:
// sample_error captures the current exception as its nested one.
std::exception_ptr wrap_current(std::size_t index, std::uint64_t epoch, unsigned worker) {
  std::string message = "unknown exception (not derived from std::exception)";
  std::string file;
  try {
    throw;
  } catch (file_error const& e) {
    message = e.what();
    file = e.path();
  } catch (std::exception const& e) {
    message = e.what();
  } catch (...) {
  }
  return std::make_exception_ptr(sample_error{index, epoch, worker, message, std::move(file)});
}

}  // namespace

loader_core::loader_core(std::shared_ptr<dataset const> data, loader_options options)
    : data_{std::move(data)},
      options_{options},
      layout_{data_->spec(), options_.batch_size},
      tuning_{plan_autotune(options_, layout_.slot_bytes())},
      sampler_{data_->size(),
               options_.shuffle,
               options_.seed,
               *options_.rank,
               *options_.world_size,
               {options_.chunk_window > 0 ? data_->storage_chunk() : 0, options_.chunk_window}},
      plan_{sampler_.shard_size(), options_.batch_size, options_.accumulation_steps,
            options_.last_batch, options_.last_step},
      started_{clock::now()},
      started_ns_{to_ns(started_)},
      active_workers_{tuning_.start_workers},
      active_depth_{tuning_.start_depth},
      max_slots_{
          held_batches_slots(tuning_.slots, layout_.slot_bytes(), held_batches_budget(options_))},
      activity_{std::make_unique<worker_activity[]>(tuning_.threads)},
      ring_interval_ns_{ring_history_start_interval_ns} {
  if (options_.trace_events > 0) {
    trace_ = std::make_unique<trace_recorder>(options_.trace_events);
  }
  ring_history_.reserve(stats::ring_history_capacity);
  if (options_.target == placement::cuda) {
    stage_ = make_cuda_stage(layout_, tuning_.slots, max_slots_, options_);
  }
  slots_.reserve(max_slots_);
  for (std::size_t i = 0; i < tuning_.slots; ++i) {
    slots_.push_back(std::make_unique<slot>(i, stage_ ? stage_->host_memory(i) : nullptr,
                                            layout_.slot_bytes(), slot_layout::alignment,
                                            options_.batch_size));
  }
  auto const effective = options_.batch_size * options_.accumulation_steps * *options_.world_size;
  if (options_.order == sample_order::given) {
    logger()->info(
        "{} samples ({}): the order of each epoch is given by the caller (set_epoch(epoch, "
        "order)); batch_size {} x accumulation_steps {}",
        data_->size(), layout_.spec().to_string(), options_.batch_size,
        options_.accumulation_steps);
  } else {
    logger()->info(
        "{} samples ({}), rank {} of {}: {} batches and {} optimizer steps per epoch; effective "
        "batch = batch_size {} x accumulation_steps {} x world_size {} = {}",
        data_->size(), layout_.spec().to_string(), *options_.rank, *options_.world_size,
        plan_.batches(), plan_.steps(), options_.batch_size, options_.accumulation_steps,
        *options_.world_size, effective);
  }
  logger()->info("{} workers, ring of {} slots x {} = {} of host memory, allocated once",
                 tuning_.threads, slots_.size(), mib_text(layout_.slot_bytes()),
                 mib_text(layout_.slot_bytes() * slots_.size()));
  bool const auto_workers_on = options_.workers == auto_workers;
  bool const auto_depth_on = options_.prefetch_depth == auto_depth;
  if (auto_workers_on || auto_depth_on) {
    tuner_ = std::make_unique<autotuner>(
        autotune_bounds{auto_workers_on, auto_depth_on, tuning_.threads, tuning_.slots});
    logger()->info(
        "autotuning {}: starting with {} of {} workers active and {} of {} slots in use{}; "
        "deciding every {} batches",
        auto_workers_on && auto_depth_on ? "workers and prefetch depth"
        : auto_workers_on                ? "workers"
                                         : "prefetch depth",
        active_workers_, tuning_.threads, active_depth_, slots_.size(),
        auto_depth_on ? " (budget " + mib_text(tuning_.budget_bytes) + ")" : std::string{},
        options_.autotune.window_batches);
  }
  if (options_.order == sample_order::given) {
    // The caller's sampler decides; the builtin order's settings say nothing here.
  } else if (sampler_.chunk_aware()) {
    logger()->info("chunk-aware shuffle: {} chunks of {} samples, drawn {} chunks at a time",
                   (data_->size() + data_->storage_chunk() - 1) / data_->storage_chunk(),
                   data_->storage_chunk(), options_.chunk_window);
  } else if (options_.shuffle && options_.chunk_window > 0) {
    logger()->info(
        "chunk_window {} ignored: the dataset reports no storage chunks (a plain "
        "shuffle is used)",
        options_.chunk_window);
  }
  if (options_.order == sample_order::builtin && plan_.batches() == 0) {
    logger()->warn(
        "this rank's epoch has no batches ({} samples, batch_size {}, last_batch {}): next() "
        "will return nothing",
        sampler_.shard_size(), options_.batch_size,
        options_.last_batch == tail_policy::drop ? "drop" : "keep");
  }
}

loader_core::~loader_core() {
  stop();
}

void loader_core::start() {
  threads_.reserve(tuning_.threads);
  try {
    for (unsigned w = 0; w < tuning_.threads; ++w) {
      threads_.emplace_back([this, w] { worker_main(w); });
    }
  } catch (...) {
    stop();
    throw;
  }
}

void loader_core::stop() noexcept {
  {
    std::lock_guard const lock{mutex_};
    stopping_ = true;
    ring_events_.fetch_add(1, std::memory_order_release);
  }
  stop_flag_.store(true, std::memory_order_relaxed);
  work_cv_.notify_all();
  standby_cv_.notify_all();
  ready_cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) {
      t.join();
    }
  }
}

// ---- workers ---------------------------------------------------------------------------------

void loader_core::worker_main(unsigned worker) {
  auto& me = activity_[worker];
  if (stage_) {
    try {
      stage_->bind_worker_thread();
    } catch (...) {
      fail(std::current_exception());
      return;
    }
  }
  std::unique_lock lock{mutex_};
  // After a fatal error no batch can be completed: workers stop rather than retry it forever.
  while (!stopping_ && !fatal_) {
    if (worker >= active_workers_) {
      // Not needed now (autotuning): sleep until the tuner adds workers or the loader stops.
      standby_cv_.wait(lock, [&] { return stopping_ || worker < active_workers_; });
      continue;
    }
    slot* s = find_work_locked();
    if (s == nullptr) {
      // Idle because every slot (of the active depth) is taken counts as waiting for a free slot.
      bool const ring_full = depth_full_locked();
      auto const idle_from = clock::now();
      if (spinning_workers_ == 0) {
        spin_for_work(lock);  // catches a release that follows soon, without a wake-up
      } else {
        ++parked_workers_;
        work_cv_.wait(lock);
        --parked_workers_;
      }
      if (ring_full) {
        auto const idle_to = clock::now();
        me.slot_wait_time.record_exclusive(nanoseconds_between(idle_from, idle_to));
        if (trace_) {
          trace_->record(span_kind::slot_wait, worker, to_ns(idle_from), to_ns(idle_to));
        }
      }
      continue;
    }
    ++s->attached;
    lock.unlock();
    fill(*s, worker);
    lock.lock();
    if (--s->attached == 0 && s->status == slot::state::free) {
      if (slot_freed_locked()) {  // a discarded slot just became reusable
        work_cv_.notify_one();
      }
    }
  }
}

void loader_core::spin_for_work(std::unique_lock<std::mutex>& lock) {
  // Waking a parked thread is a system call (several microseconds, more in a VM), paid by the
  // consumer in release(). One idle worker polls for a short while first, so that a consumer
  // that gives slots back at a high rate never pays it; after the window it parks as usual.
  // The poll is on an event counter, not the mutex: the consumer's path stays uncontended.
  constexpr auto window = std::chrono::microseconds{50};
  ++spinning_workers_;
  auto const seen = ring_events_.load(std::memory_order_acquire);
  lock.unlock();
  auto const until = clock::now() + window;
  bool event = false;
  // Yielding between polls hands the core to a worker or consumer that has real work when the
  // machine is oversubscribed (more threads than cores); on an idle core it returns at once.
  while (!(event = ring_events_.load(std::memory_order_acquire) != seen) && clock::now() < until) {
    std::this_thread::yield();
  }
  lock.lock();
  --spinning_workers_;
  // Re-checked under the lock: an event between the poll and here is never lost, because
  // whoever caused it saw spinning_workers_ > 0 and left the wake-up to this worker.
  if (!event && !stopping_ && ring_events_.load(std::memory_order_relaxed) == seen) {
    ++parked_workers_;
    work_cv_.wait(lock);
    --parked_workers_;
  }
}

bool loader_core::slot_freed_locked() {
  ring_events_.fetch_add(1, std::memory_order_release);
  return spinning_workers_ == 0 && parked_workers_ > 0;
}

slot* loader_core::find_work_locked() {
  // The earliest batch still needing hands first: many workers finish one batch fast, and the
  // batch the consumer wants next is the one they finish first.
  slot* earliest = nullptr;
  for (auto const& s : slots_) {
    if (s->status == slot::state::filling &&
        s->next_claim.load(std::memory_order_relaxed) < s->count &&
        (earliest == nullptr || s->at < earliest->at)) {
      earliest = s.get();
    }
  }
  auto const* plan = plan_locked(producer_.epoch);
  if (earliest != nullptr || plan == nullptr || plan->batches() == 0) {
    return earliest;  // nothing to start: no batches, or an epoch whose order is not given yet
  }
  // Only the active depth is used: a slot beyond it is never assigned.
  for (std::size_t i = 0; i < active_depth_; ++i) {
    auto& s = slots_[i];
    if (s->status == slot::state::free && s->attached == 0) {
      assign_locked(*s);
      if (parked_workers_ > 0) {
        work_cv_.notify_all();  // more hands for the new batch
      }
      return s.get();
    }
  }
  return nullptr;
}

void loader_core::assign_locked(slot& s) {
  auto const& plan = *plan_locked(producer_.epoch);  // find_work_locked checked it
  auto const span = plan.span(producer_.sequence);
  s.status = slot::state::filling;
  s.generation = generation_;
  s.at = producer_;
  s.first_position = span.first;
  s.count = span.count;
  s.delivered = 0;
  s.step = plan.step(producer_.sequence);
  s.order = options_.order == sample_order::given ? given_ : nullptr;
  s.error = nullptr;
  s.skipped.clear();
  s.cancelled.store(false, std::memory_order_relaxed);
  // A claim takes a short run of consecutive samples when the batch is large next to the worker
  // count: still many workers per batch, but far fewer trips to the shared counters.
  s.grain = std::clamp<std::size_t>(span.count / (4 * std::size_t{active_workers_}), 1, 16);
  s.remaining.store(span.count, std::memory_order_relaxed);
  s.next_claim.store(0, std::memory_order_release);
  producer_ = normalized({producer_.epoch, producer_.sequence + 1});
  ring_events_.fetch_add(1, std::memory_order_release);  // new work: a spinning worker joins
}

void loader_core::fail(std::exception_ptr error) noexcept {
  {
    std::lock_guard const lock{mutex_};
    if (!fatal_) {
      fatal_ = std::move(error);
    }
  }
  ready_cv_.notify_all();
}

void loader_core::fill(slot& s, unsigned worker) {
  if (stage_) {
    // The host half may still be the source of the previous batch's copy (rare: only when
    // workers lap the copy engine).
    try {
      stage_->wait_host_free(s.id);
    } catch (...) {
      fail(std::current_exception());
      return;
    }
  }
  // No lock: claims are atomic, and `count` cannot change while this worker is attached.
  while (!stop_flag_.load(std::memory_order_relaxed) &&
         !s.cancelled.load(std::memory_order_relaxed)) {
    auto const first = s.next_claim.fetch_add(s.grain, std::memory_order_acq_rel);
    if (first >= s.count) {
      return;
    }
    auto const last = std::min(first + s.grain, s.count);
    for (auto position = first; position < last; ++position) {
      read_one(s, position, worker);
    }
    if (s.remaining.fetch_sub(last - first, std::memory_order_acq_rel) == last - first) {
      complete(s, worker);
    }
  }
}

void loader_core::read_one(slot& s, std::size_t position, unsigned worker) {
  auto& me = activity_[worker];
  auto const epoch = s.at.epoch;
  auto const index = slot_index(s, position);
  s.indices[position] = index;
  read_context const ctx{index, epoch, worker, mix_seed(options_.seed, epoch, index), &stop_flag_};
  auto const begin = steady_ns();
  me.index.store(index, std::memory_order_relaxed);
  me.since_ns.store(begin, std::memory_order_relaxed);
  me.on.store(&s, std::memory_order_release);
  nvtx_range const range{"gpufeed: read"};
  // Normally finish_contents has cleared it, but a batch cancelled before its last read never gets
  // there, and its failures must not pass to the slot's next batch.
  s.errors[position] = nullptr;
  try {
    data_->read(index, sample_view{layout_, s.memory, position}, ctx);
  } catch (...) {
    s.errors[position] = wrap_current(index, epoch, worker);
  }
  me.on.store(nullptr, std::memory_order_relaxed);
  auto const end = steady_ns();
  me.read_time.record_exclusive(end - begin);
  if (trace_) {
    trace_->record(span_kind::read, worker, begin, end, index, s.at.sequence);
  }
}

void loader_core::finish_contents(slot& s) {
  // Every read of this slot has returned and this worker is still attached: the slot is ours.
  std::size_t kept = 0;
  for (std::size_t p = 0; p < s.count; ++p) {
    if (!s.errors[p]) {
      if (kept != p) {  // close the gap left by a skipped sample (only after a skip)
        for (std::size_t f = 0; f < layout_.spec().size(); ++f) {
          std::memmove(layout_.locate(s.memory, f, kept), layout_.locate(s.memory, f, p),
                       layout_.field_bytes(f));
        }
        s.indices[kept] = s.indices[p];
      }
      ++kept;
      continue;
    }
    if (options_.on_error == error_policy::raise) {
      if (!s.error) {
        s.error = s.errors[p];
      }
      ++kept;  // the batch is not delivered; nothing to compact
    } else {
      s.skipped.push_back(s.indices[p]);
    }
    // Released here, before the consumer can see the batch: it may still hold s.error.
    s.errors[p] = nullptr;
  }
  s.delivered = kept;
}

void loader_core::complete(slot& s, unsigned worker) {
  nvtx_range const range{"gpufeed: batch complete"};
  auto const begin = trace_ ? steady_ns() : 0;
  finish_contents(s);
  // Read while the slot is still this worker's: once it is ready the consumer may take it.
  auto const sequence = s.at.sequence;
  auto const delivered = s.delivered;
  if (stage_ && !s.error && !s.cancelled.load(std::memory_order_relaxed)) {
    try {
      stage_->copy_async(s.id, s.delivered);
    } catch (...) {
      fail(std::current_exception());
      return;
    }
  }
  bool wake = false;
  {
    std::lock_guard const lock{mutex_};
    if (s.status != slot::state::filling || s.generation != generation_) {
      return;  // discarded by set_epoch / restore while it was being filled
    }
    s.status = slot::state::ready;
    wake = consumer_waiting_;
  }
  if (trace_) {
    trace_->record(span_kind::batch_complete, worker, begin, steady_ns(), sequence, delivered);
  }
  if (wake) {
    ready_cv_.notify_one();  // one consumer thread
  }
}

// ---- consumer --------------------------------------------------------------------------------

cursor loader_core::normalized(cursor c) const noexcept {
  auto const* plan = plan_locked(c.epoch);
  return plan != nullptr && c.sequence >= plan->batches() ? cursor{c.epoch + 1, 0} : c;
}

batch_plan const* loader_core::plan_locked(std::uint64_t epoch) const noexcept {
  if (options_.order == sample_order::builtin) {
    return &plan_;
  }
  return given_ && given_->epoch == epoch ? &given_->plan : nullptr;
}

std::size_t loader_core::slot_index(slot const& s, std::size_t position) const noexcept {
  auto const shard_position = s.first_position + position;
  return s.order ? s.order->indices[shard_position] : sampler_.index(s.at.epoch, shard_position);
}

std::size_t loader_core::index_locked(std::uint64_t epoch, std::size_t position) const {
  if (options_.order == sample_order::builtin) {
    return sampler_.index(epoch, position);
  }
  GPUFEED_EXPECTS(given_ && given_->epoch == epoch,
                  "no order given for epoch " + std::to_string(epoch));
  return given_->indices[position];
}

loader_core::plan_sizes loader_core::current_plan_sizes() const {
  std::lock_guard const lock{mutex_};
  auto const* plan = plan_locked(consumer_.epoch);
  if (plan == nullptr) {
    return {};
  }
  return {plan->batches(), plan->steps(), plan->samples()};
}

slot* loader_core::consumer_slot_locked() const noexcept {
  for (auto const& s : slots_) {
    if ((s->status == slot::state::filling || s->status == slot::state::ready) &&
        s->generation == generation_ && s->at == consumer_) {
      return s.get();
    }
  }
  return nullptr;
}

bool loader_core::all_leased_locked() const noexcept {
  return count_locked(slot::state::leased) >= active_depth_;
}

bool loader_core::depth_full_locked() const noexcept {
  for (std::size_t i = 0; i < active_depth_; ++i) {
    if (slots_[i]->status == slot::state::free) {
      return false;
    }
  }
  return true;
}

std::size_t loader_core::count_locked(slot::state status) const noexcept {
  return static_cast<std::size_t>(std::count_if(
      slots_.begin(), slots_.end(), [status](auto const& s) { return s->status == status; }));
}

next_result loader_core::next(std::optional<stream_view> consumer, clock::time_point give_up_at) {
  if (stage_ && !consumer) {
    consumer = options_.consumer_stream;
    GPUFEED_EXPECTS(consumer.has_value(),
                    "next() on the CUDA path needs the stream your training step runs on: set "
                    "loader_options::consumer_stream, or call next(gpufeed::stream_view{stream})");
  }
  std::unique_lock lock{mutex_};
  if (fatal_) {
    std::rethrow_exception(fatal_);
  }
  auto const* plan = plan_locked(consumer_.epoch);
  if (plan == nullptr) {
    throw logic_error{"next(): loader_options::order is sample_order::given and epoch " +
                      std::to_string(consumer_.epoch) +
                      " has no order yet; give it first with set_epoch(" +
                      std::to_string(consumer_.epoch) + ", order)"};
  }
  if (consumer_.sequence >= plan->batches()) {
    consumer_ = {consumer_.epoch + 1, 0};
    pending_since_.reset();
    return {next_result::status::end_of_epoch, std::nullopt};
  }
  // A wait that an earlier try_next_for left pending goes on: the timeout counts from its start.
  if (!pending_since_) {
    pending_since_ = clock::now();
    pending_warn_at_ = *pending_since_ + options_.stall_warning;
  }
  auto const wait_from = *pending_since_;
  auto const deadline =
      options_.timeout.count() > 0 ? wait_from + options_.timeout : clock::time_point::max();
  // Workers wake the consumer only while it waits: a wake-up is a system call.
  struct waiting_flag {
    bool& flag;
    explicit waiting_flag(bool& f) : flag{f} { flag = true; }
    ~waiting_flag() { flag = false; }
    waiting_flag(waiting_flag const&) = delete;
    waiting_flag& operator=(waiting_flag const&) = delete;
  };
  slot* s = consumer_slot_locked();
  std::optional<nvtx_range> wait_range;
  while (s == nullptr || s->status != slot::state::ready) {
    if (!wait_range) {
      wait_range.emplace("gpufeed: consumer wait");
    }
    if (s == nullptr && all_leased_locked()) {
      if (tuner_ && tuner_->bounds().tune_depth && active_depth_ < slots_.size()) {
        // The consumer holds every slot in use: an automatic depth makes room for one more.
        auto const change =
            apply_locked(active_workers_, active_depth_ + 1,
                         "the consumer holds " + std::to_string(count_locked(slot::state::leased)) +
                             " batches at once, every slot in use");
        lock.unlock();
        logger()->info("{}", change);
        lock.lock();
      } else if (!grow_locked(lock)) {
        throw all_leased_error_locked();
      }
      if (fatal_) {
        std::rethrow_exception(fatal_);
      }
      s = consumer_slot_locked();
      continue;
    }
    auto const now = clock::now();
    if (now >= give_up_at) {
      return {next_result::status::pending, std::nullopt};  // not consumed; the wait goes on
    }
    waiting_flag const waiting{consumer_waiting_};
    auto const wake_at = std::min({deadline, pending_warn_at_, give_up_at});
    if (ready_cv_.wait_until(lock, wake_at) == std::cv_status::timeout) {
      auto const later = clock::now();
      if (later >= deadline) {
        auto [index, why] = describe_wait_locked(consumer_slot_locked());
        record_wait_locked(to_ns(wait_from), to_ns(later), std::nullopt);
        pending_since_.reset();
        throw timeout_error{
            index, "gpufeed: timeout after " + std::to_string(options_.timeout.count()) +
                       " ms waiting for batch " + std::to_string(consumer_.sequence) +
                       " of epoch " + std::to_string(consumer_.epoch) + ": " + why +
                       ". Call next() again to keep waiting, or raise loader_options::timeout"};
      }
      if (later >= pending_warn_at_) {
        auto const why = describe_wait_locked(consumer_slot_locked()).second;
        auto const waited = seconds(nanoseconds_between(wait_from, later));
        auto const at = consumer_;
        pending_warn_at_ = later + options_.stall_warning;
        lock.unlock();  // no log call under the hot mutex
        logger()->warn("next() has waited {:.0f} s for batch {} of epoch {}: {}", waited,
                       at.sequence, at.epoch, why);
        lock.lock();
      }
    }
    if (fatal_) {
      std::rethrow_exception(fatal_);
    }
    s = consumer_slot_locked();
  }
  wait_range.reset();
  pending_since_.reset();
  auto const ready = count_locked(slot::state::ready);
  auto const delivered_ns = to_ns(clock::now());
  record_wait_locked(to_ns(wait_from), delivered_ns, ready);
  ready_sum_ += static_cast<double>(ready);
  ++consumer_.sequence;
  if (s->error) {
    auto error = std::exchange(s->error, nullptr);
    s->status = slot::state::free;
    ++failed_batches_;
    bool const wake = slot_freed_locked();
    lock.unlock();
    if (wake) {
      work_cv_.notify_one();
    }
    std::rethrow_exception(error);
  }
  s->status = slot::state::leased;
  record_delivery_locked(*s);
  auto const change = tuner_ ? tune_locked(delivered_ns) : std::string{};
  lock.unlock();
  if (!change.empty()) {
    logger()->info("{}", change);
  }
  if (stage_) {
    try {
      stage_->hand_off(s->id, *consumer);
    } catch (...) {
      release(s);
      throw;
    }
  }
  return {next_result::status::ready, batch{shared_from_this(), s}};
}

bool loader_core::grow_locked(std::unique_lock<std::mutex>& lock) {
  // Only the consumer grows the ring, so nobody else changes slots_.size() meanwhile.
  auto const id = slots_.size();
  if (id >= max_slots_ || active_depth_ < id) {
    return false;
  }
  auto const held = count_locked(slot::state::leased);
  bool const first = grown_ == 0;
  lock.unlock();
  if (first) {
    logger()->warn(
        "all {} ring slots are leased to batches that are still alive: the training loop keeps "
        "batches past the next step (a list of losses keeps each step's graph and its input "
        "tensors; so does a saved batch or a tensor sliced from one). The ring grows by one "
        "slot of {} for each batch held beyond it, up to {} slots ({}; "
        "loader_options::held_batches_budget), then next() raises. Keep loss.item() or a "
        "copy instead to use less memory.",
        held, mib_text(layout_.slot_bytes()), max_slots_,
        mib_text(layout_.slot_bytes() * max_slots_));
  }
  // Allocated with the lock released: a large slot takes a while to touch.
  std::unique_ptr<slot> added;
  try {
    if (stage_) {
      auto const stage_id = stage_->add_slot();
      GPUFEED_EXPECTS(stage_id == id, "the CUDA stage's slots are out of step with the ring's");
    }
    added =
        std::make_unique<slot>(id, stage_ ? stage_->host_memory(id) : nullptr, layout_.slot_bytes(),
                               slot_layout::alignment, options_.batch_size);
  } catch (...) {
    lock.lock();
    throw;
  }
  lock.lock();
  slots_.push_back(std::move(added));  // reserved: no reallocation under the workers
  ++grown_;
  active_depth_ = slots_.size();
  ring_events_.fetch_add(1, std::memory_order_release);
  if (parked_workers_ > 0) {
    work_cv_.notify_one();
  }
  return true;
}

logic_error loader_core::all_leased_error_locked() const {
  auto const held = count_locked(slot::state::leased);
  if (max_slots_ <= slots_.size() && grown_ > 0) {
    return logic_error{
        "gpufeed: all " + std::to_string(held) +
        " ring slots are leased to batches that are still alive, and the ring has grown to its "
        "limit of " +
        std::to_string(max_slots_) + " slots (" + mib_text(layout_.slot_bytes() * max_slots_) +
        ", loader_options::held_batches_budget). Something keeps every batch alive (for "
        "example total_loss += loss keeps each step's graph and inputs: add loss.item() "
        "instead); release batches, or raise held_batches_budget"};
  }
  return logic_error{
      "gpufeed: all " + std::to_string(active_depth_) +
      " ring slots are leased to batches that are still alive, so the next batch cannot be "
      "prepared, and the ring may not grow (loader_options::held_batches_budget = 0, or one "
      "slot of " +
      mib_text(layout_.slot_bytes()) +
      " does not fit in it); release (destroy) batches before asking for more, or raise "
      "loader_options::prefetch_depth above the number of batches you hold at once"};
}

loader_core::worker_totals loader_core::worker_totals_now() const noexcept {
  worker_totals total;
  for (unsigned w = 0; w < tuning_.threads; ++w) {
    total.read_ns += static_cast<std::int64_t>(activity_[w].read_time.total_ns());
    total.slot_wait_ns += static_cast<std::int64_t>(activity_[w].slot_wait_time.total_ns());
  }
  return total;
}

std::string loader_core::tune_locked(std::int64_t now) {
  // The first delivery only opens the first window: the start-up fill is left out of every one.
  bool const first = window_from_ns_ == 0;
  if (!first && ++window_batches_ < options_.autotune.window_batches) {
    return {};
  }
  auto const wait_ns = consumer_wait_ns_locked();
  auto const totals = worker_totals_now();
  std::optional<autotune_decision> d;
  if (!first) {
    autotune_window w;
    w.wall_s = seconds(now - window_from_ns_);
    w.consumer_wait_s = seconds(wait_ns - window_wait_ns_);
    w.read_s = seconds(totals.read_ns - window_read_ns_);
    w.slot_wait_s = seconds(totals.slot_wait_ns - window_slot_wait_ns_);
    w.batches = window_batches_;
    w.workers = active_workers_;
    w.depth = active_depth_;
    d = tuner_->decide(w);
  }
  window_from_ns_ = now;  // the next window begins
  window_wait_ns_ = wait_ns;
  window_read_ns_ = totals.read_ns;
  window_slot_wait_ns_ = totals.slot_wait_ns;
  window_batches_ = 0;
  if (!d || d->action == autotune_action::keep) {
    return {};
  }
  return apply_locked(d->workers, d->depth, d->reason);
}

std::string loader_core::apply_locked(unsigned workers, std::size_t depth,
                                      std::string const& reason) {
  ++tune_changes_;
  last_change_batch_ = batches_;
  std::string what;
  if (workers != active_workers_) {
    what = "workers " + std::to_string(active_workers_) + " -> " + std::to_string(workers);
    active_workers_ = workers;
    standby_cv_.notify_all();  // added workers start; removed ones finish their read and park
    work_cv_.notify_all();     // parked workers re-check whether they are still active
  }
  if (depth != active_depth_) {
    what += (what.empty() ? "" : ", ") + std::string{"prefetch_depth "} +
            std::to_string(active_depth_) + " -> " + std::to_string(depth);
    active_depth_ = depth;
    ring_events_.fetch_add(1, std::memory_order_release);
    work_cv_.notify_all();  // a slot more to fill
  }
  return "autotune at batch " + std::to_string(batches_) + ": " + what + ": " + reason;
}

void loader_core::record_wait_locked(std::int64_t from, std::int64_t to,
                                     std::optional<std::size_t> ready) {
  consumer_wait_time_.record_exclusive(to - from);
  if (trace_) {
    trace_->record(span_kind::consumer_wait, tuning_.threads, from, to, consumer_.sequence,
                   consumer_.epoch);
  }
  if (!ready) {
    return;  // a timeout: the batch is still to come
  }
  auto const t = std::max<std::int64_t>(to - started_ns_, 1);
  if (first_batch_ns_ == 0) {
    first_batch_ns_ = t;
    first_wait_ns_ = consumer_wait_ns_locked();  // earlier timeouts included
  }
  if (t >= ring_next_ns_) {
    if (ring_history_.size() == stats::ring_history_capacity) {
      // Full: keep every other sample and halve the rate, so the history spans the whole run.
      for (std::size_t i = 0; 2 * i < ring_history_.size(); ++i) {
        ring_history_[i] = ring_history_[2 * i];
      }
      ring_history_.resize((ring_history_.size() + 1) / 2);
      ring_interval_ns_ *= 2;
    }
    ring_history_.push_back({seconds(t), static_cast<std::uint32_t>(*ready),
                             static_cast<std::uint32_t>(count_locked(slot::state::leased)),
                             static_cast<std::uint32_t>(count_locked(slot::state::filling))});
    ring_next_ns_ = t + ring_interval_ns_;
  }
}

void loader_core::record_delivery_locked(slot const& s) {
  ++batches_;
  samples_ += s.delivered;
  for (auto index : s.skipped) {
    ++skipped_;
    if (skipped_list_.size() < options_.max_listed_skips) {
      skipped_list_.push_back(index);
    }
    // Say it, but do not flood the log when a whole shard is bad.
    if (skipped_ <= 20) {
      logger()->warn("skipped sample {} (epoch {}, batch {}); {} skipped so far", index, s.at.epoch,
                     s.at.sequence, skipped_);
    }
  }
}

std::pair<std::size_t, std::string> loader_core::describe_wait_locked(slot const* s) const {
  if (s == nullptr) {
    auto const index =
        index_locked(consumer_.epoch, plan_locked(consumer_.epoch)->span(consumer_.sequence).first);
    auto const free = count_locked(slot::state::free);
    auto const ring = "the ring's " + std::to_string(slots_.size()) +
                      " slots: " + std::to_string(count_locked(slot::state::leased)) +
                      " leased to live " + "batches, " +
                      std::to_string(count_locked(slot::state::ready)) + " ready, " +
                      std::to_string(count_locked(slot::state::filling)) + " filling, " +
                      std::to_string(free) + " free";
    return {index, "its first sample " + std::to_string(index) + " has not started (" + ring +
                       (free > 0 ? "; no worker has taken the free slot yet)" : ")")};
  }
  // The read in progress on this batch that started first is the one everybody waits for.
  auto const now = steady_ns();
  std::optional<unsigned> oldest;
  for (unsigned w = 0; w < tuning_.threads; ++w) {
    if (activity_[w].on.load(std::memory_order_acquire) == s &&
        (!oldest || activity_[w].since_ns.load() < activity_[*oldest].since_ns.load())) {
      oldest = w;
    }
  }
  if (oldest) {
    auto const index = activity_[*oldest].index.load();
    auto const busy_ms = (now - activity_[*oldest].since_ns.load()) / 1'000'000;
    return {index, "sample " + std::to_string(index) + " has been reading on worker " +
                       std::to_string(*oldest) + " for " + std::to_string(busy_ms) + " ms"};
  }
  auto const claimed = std::min(s->next_claim.load(), s->count);
  auto const position = claimed < s->count ? claimed : s->count - 1;
  auto const index = slot_index(*s, position);
  return {index, "sample " + std::to_string(index) + " is waiting for a worker (all " +
                     std::to_string(active_workers_) + " are busy with other batches)"};
}

void loader_core::use_on(slot const& s, stream_view stream) {
  if (stage_) {
    stage_->use_on(s.id, stream);
  }
}

void loader_core::release(slot* s) noexcept {
  if (stage_) {
    stage_->release(s->id);  // before the slot is free: its next copy must wait for this
  }
  bool wake = false;
  {
    std::lock_guard const lock{mutex_};
    s->status = slot::state::free;
    wake = slot_freed_locked();
  }
  // One worker is enough: it takes the slot and wakes others to help fill it.
  if (wake) {
    work_cv_.notify_one();
  }
}

// ---- positioning -----------------------------------------------------------------------------

void loader_core::flush_locked(cursor to) {
  ++generation_;
  for (auto const& s : slots_) {
    if (s->status == slot::state::filling || s->status == slot::state::ready) {
      s->status = slot::state::free;
      s->cancelled.store(true, std::memory_order_relaxed);
    }
  }
  consumer_ = to;
  producer_ = normalized(to);
  pending_since_.reset();
  ring_events_.fetch_add(1, std::memory_order_release);
  work_cv_.notify_all();
}

void loader_core::set_epoch(std::uint64_t epoch) {
  std::lock_guard const lock{mutex_};
  cursor const start{epoch, 0};
  if (consumer_ == start) {
    return;
  }
  // Past the last batch of epoch - 1 the producer is already on `epoch`: keep what it prepared.
  if (normalized(consumer_) == start) {
    consumer_ = start;
    pending_since_.reset();
    return;
  }
  flush_locked(start);
}

void loader_core::set_epoch(std::uint64_t epoch, epoch_order order) {
  GPUFEED_EXPECTS(options_.order == sample_order::given,
                  "set_epoch(epoch, order): this loader makes its own order "
                  "(loader_options::order = sample_order::builtin); construct it with "
                  "order = sample_order::given to give each epoch's indices");
  // Checked and cut outside the lock: O(order size).
  auto given = make_given_order(epoch, std::move(order), sampler_.dataset_size(), options_);
  std::lock_guard const lock{mutex_};
  cursor const start{epoch, 0};
  // Nothing of `epoch` can have been prepared before its first order: the producer waits at its
  // start. A second order for the same epoch discards what the first one prepared.
  bool const first_order = !(given_ && given_->epoch == epoch);
  bool const at_start = consumer_ == start || normalized(consumer_) == start;
  given_ = std::move(given);
  if (first_order && at_start && producer_ == start) {
    consumer_ = start;
    pending_since_.reset();
    ring_events_.fetch_add(1, std::memory_order_release);
    work_cv_.notify_all();
    return;
  }
  flush_locked(start);
}

std::uint64_t loader_core::epoch() const {
  std::lock_guard const lock{mutex_};
  return consumer_.epoch;
}

loader_state loader_core::state() const {
  std::lock_guard const lock{mutex_};
  loader_state out;
  out.seed = options_.seed;
  out.epoch = consumer_.epoch;
  out.next_sequence = consumer_.sequence;
  out.dataset_size = sampler_.dataset_size();  // dataset::size() is read once, at construction
  out.batch_size = options_.batch_size;
  out.rank = *options_.rank;
  out.world_size = *options_.world_size;
  out.shuffle = options_.shuffle;
  out.chunk_window = options_.chunk_window;
  return out;
}

void loader_core::restore(loader_state const& wanted) {
  auto const here = state();
  auto const mismatch = [&](char const* what, auto saved, auto current) {
    GPUFEED_EXPECTS(saved == current, std::string{"cannot restore: the state was saved with "} +
                                          what + " = " + std::to_string(saved) +
                                          " but this loader has " + std::to_string(current) +
                                          "; construct the loader with the same settings");
  };
  mismatch("dataset size", wanted.dataset_size, here.dataset_size);
  mismatch("batch_size", wanted.batch_size, here.batch_size);
  mismatch("rank", wanted.rank, here.rank);
  mismatch("world_size", wanted.world_size, here.world_size);
  mismatch("shuffle", wanted.shuffle, here.shuffle);
  mismatch("seed", wanted.seed, here.seed);
  mismatch("chunk_window", wanted.chunk_window, here.chunk_window);
  std::lock_guard const lock{mutex_};
  auto const* plan = plan_locked(wanted.epoch);
  GPUFEED_EXPECTS(plan != nullptr, "cannot restore to epoch " + std::to_string(wanted.epoch) +
                                       ": its order is not given yet; call set_epoch(" +
                                       std::to_string(wanted.epoch) + ", order) first");
  GPUFEED_EXPECTS(wanted.next_sequence <= plan->batches(),
                  "cannot restore: next_sequence " + std::to_string(wanted.next_sequence) +
                      " is past the epoch's " + std::to_string(plan->batches()) + " batches");
  cursor const to{wanted.epoch, static_cast<std::size_t>(wanted.next_sequence)};
  if (consumer_ != to) {
    flush_locked(to);
  }
}

void loader_core::expect_tracing() const {
  GPUFEED_EXPECTS(trace_ != nullptr,
                  "write_trace: tracing is off; set loader_options::trace_events to the number of "
                  "spans to keep (e.g. 100000)");
}

void loader_core::write_trace(std::ostream& out) const {
  expect_tracing();
  trace_->write(out, started_ns_, tuning_.threads);
}

stats loader_core::snapshot() const {
  stats out;
  latency_counts reads;
  latency_counts slot_waits;
  for (unsigned w = 0; w < tuning_.threads; ++w) {
    activity_[w].read_time.read_into(reads);
    activity_[w].slot_wait_time.read_into(slot_waits);
  }
  out.read = reads.summary();
  out.read_s = out.read.total_s;
  out.samples_read = out.read.count;
  out.slot_wait = slot_waits.summary();
  out.slot_wait_s = out.slot_wait.total_s;
  out.worker_threads = tuning_.threads;
  out.slot_bytes = layout_.slot_bytes();
  out.pinned_bytes = 0;
  if (stage_) {
    stage_->add_to(out);
  }
  std::lock_guard const lock{mutex_};
  out.ring_capacity = slots_.size();
  out.host_bytes = layout_.slot_bytes() * slots_.size();
  out.ring_grown = grown_;
  out.ring_max_slots = max_slots_;
  out.wall_s = seconds(nanoseconds_between(started_, clock::now()));
  out.workers = active_workers_;
  out.ring_slots = active_depth_;
  out.autotuned = tuner_ != nullptr;
  out.autotune_changes = tune_changes_;
  out.autotune_last_change_batch = last_change_batch_;
  out.batches = batches_;
  out.samples = samples_;
  out.bytes = samples_ * layout_.spec().bytes_per_sample();
  out.skipped = skipped_;
  out.failed_batches = failed_batches_;
  out.skipped_indices = skipped_list_;
  out.ring_ready = count_locked(slot::state::ready);
  out.ring_leased = count_locked(slot::state::leased);
  auto const seen = batches_ + failed_batches_;  // every next() that added to ready_sum_
  out.ring_ready_mean = seen > 0 ? ready_sum_ / static_cast<double>(seen) : 0.0;
  latency_counts waits;
  consumer_wait_time_.read_into(waits);
  out.consumer_wait = waits.summary();
  out.consumer_wait_s = out.consumer_wait.total_s;
  out.first_batch_s = seconds(first_batch_ns_);
  out.first_wait_s = seconds(first_wait_ns_);
  out.ring_history = ring_history_;
  out.ring_history_interval_s = seconds(ring_interval_ns_);
  return out;
}

}  // namespace gpufeed::detail
