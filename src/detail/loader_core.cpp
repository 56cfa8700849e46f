#include "gpufeed/detail/loader_core.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

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
      activity_{std::make_unique<worker_activity[]>(tuning_.threads)},
      ring_interval_ns_{ring_history_start_interval_ns} {
  if (options_.trace_events > 0) {
    trace_ = std::make_unique<trace_recorder>(options_.trace_events);
  }
  ring_history_.reserve(stats::ring_history_capacity);
  if (options_.target == placement::cuda) {
    stage_ = make_cuda_stage(layout_, tuning_.slots, options_);
  }
  slots_.reserve(tuning_.slots);
  for (std::size_t i = 0; i < tuning_.slots; ++i) {
    slots_.push_back(std::make_unique<slot>(i, stage_ ? stage_->host_memory(i) : nullptr,
                                            layout_.slot_bytes(), slot_layout::alignment,
                                            options_.batch_size));
  }
  auto const effective = options_.batch_size * options_.accumulation_steps * *options_.world_size;
  logger()->info(
      "{} samples ({}), rank {} of {}: {} batches and {} optimizer steps per epoch; effective "
      "batch = batch_size {} x accumulation_steps {} x world_size {} = {}",
      data_->size(), layout_.spec().to_string(), *options_.rank, *options_.world_size,
      plan_.batches(), plan_.steps(), options_.batch_size, options_.accumulation_steps,
      *options_.world_size, effective);
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
  if (sampler_.chunk_aware()) {
    logger()->info("chunk-aware shuffle: {} chunks of {} samples, drawn {} chunks at a time",
                   (data_->size() + data_->storage_chunk() - 1) / data_->storage_chunk(),
                   data_->storage_chunk(), options_.chunk_window);
  } else if (options_.shuffle && options_.chunk_window > 0) {
    logger()->info(
        "chunk_window {} ignored: the dataset reports no storage chunks (a plain "
        "shuffle is used)",
        options_.chunk_window);
  }
  if (plan_.batches() == 0) {
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
  if (earliest != nullptr || plan_.batches() == 0) {
    return earliest;
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
  auto const span = plan_.span(producer_.sequence);
  s.status = slot::state::filling;
  s.generation = generation_;
  s.at = producer_;
  s.first_position = span.first;
  s.count = span.count;
  s.delivered = 0;
  s.step = plan_.step(producer_.sequence);
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
  auto const index = sampler_.index(epoch, s.first_position + position);
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
  return c.sequence >= plan_.batches() ? cursor{c.epoch + 1, 0} : c;
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

std::optional<batch> loader_core::next(std::optional<stream_view> consumer) {
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
  if (consumer_.sequence >= plan_.batches()) {
    consumer_ = {consumer_.epoch + 1, 0};
    return std::nullopt;
  }
  auto const wait_from = clock::now();
  auto const deadline =
      options_.timeout.count() > 0 ? wait_from + options_.timeout : clock::time_point::max();
  auto warn_at = wait_from + options_.stall_warning;
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
    if (s == nullptr && all_leased_locked() && tuner_ && tuner_->bounds().tune_depth &&
        active_depth_ < slots_.size()) {
      // The consumer holds every slot in use: an automatic depth makes room for one more.
      auto const change =
          apply_locked(active_workers_, active_depth_ + 1,
                       "the consumer holds " + std::to_string(count_locked(slot::state::leased)) +
                           " batches at once, every slot in use");
      lock.unlock();
      logger()->info("{}", change);
      lock.lock();
      if (fatal_) {
        std::rethrow_exception(fatal_);
      }
      s = consumer_slot_locked();
      continue;
    }
    waiting_flag const waiting{consumer_waiting_};
    if (s == nullptr && all_leased_locked()) {
      throw logic_error{
          "gpufeed: all " + std::to_string(active_depth_) +
          " ring slots are leased to batches that are still alive, so the next batch cannot be "
          "prepared; release (destroy) batches before asking for more, or raise "
          "loader_options::prefetch_depth above the number of batches you hold at once"};
    }
    if (ready_cv_.wait_until(lock, std::min(deadline, warn_at)) == std::cv_status::timeout) {
      auto const now = clock::now();
      if (now >= deadline) {
        auto [index, why] = describe_wait_locked(consumer_slot_locked());
        record_wait_locked(to_ns(wait_from), to_ns(now), std::nullopt);
        throw timeout_error{
            index, "gpufeed: timeout after " + std::to_string(options_.timeout.count()) +
                       " ms waiting for batch " + std::to_string(consumer_.sequence) +
                       " of epoch " + std::to_string(consumer_.epoch) + ": " + why +
                       ". Call next() again to keep waiting, or raise loader_options::timeout"};
      }
      if (now >= warn_at) {
        logger()->warn("next() has waited {:.0f} s for batch {} of epoch {}: {}",
                       seconds(nanoseconds_between(wait_from, now)), consumer_.sequence,
                       consumer_.epoch, describe_wait_locked(consumer_slot_locked()).second);
        warn_at = now + options_.stall_warning;
      }
    }
    if (fatal_) {
      std::rethrow_exception(fatal_);
    }
    s = consumer_slot_locked();
  }
  wait_range.reset();
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
  return batch{shared_from_this(), s};
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
    auto const index = sampler_.index(consumer_.epoch, plan_.span(consumer_.sequence).first);
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
  auto const index = sampler_.index(s->at.epoch, s->first_position + position);
  return {index, "sample " + std::to_string(index) + " is waiting for a worker (all " +
                     std::to_string(active_workers_) + " are busy with other batches)"};
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
  GPUFEED_EXPECTS(wanted.next_sequence <= plan_.batches(),
                  "cannot restore: next_sequence " + std::to_string(wanted.next_sequence) +
                      " is past the epoch's " + std::to_string(plan_.batches()) + " batches");
  std::lock_guard const lock{mutex_};
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
  out.ring_capacity = slots_.size();
  out.slot_bytes = layout_.slot_bytes();
  out.host_bytes = layout_.slot_bytes() * slots_.size();
  out.pinned_bytes = 0;
  if (stage_) {
    stage_->add_to(out);
  }
  std::lock_guard const lock{mutex_};
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
