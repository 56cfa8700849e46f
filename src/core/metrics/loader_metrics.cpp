#include "core/metrics/loader_metrics.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "core/units.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/log.hpp"

namespace gpufeed::detail {

namespace {
// The first spacing of stats::ring_history; it doubles each time the history fills.
constexpr std::int64_t ring_history_start_interval_ns = 10'000'000;
// Skipped samples are logged one by one up to this many, so that a bad shard does not flood it.
constexpr std::uint64_t logged_skips = 20;
}  // namespace

loader_metrics::loader_metrics(unsigned threads, std::size_t trace_events,
                               std::size_t max_listed_skips)
    : threads_{threads},
      started_ns_{steady_ns()},
      activity_{std::make_unique<worker_activity[]>(threads)},
      max_listed_skips_{max_listed_skips},
      ring_interval_ns_{ring_history_start_interval_ns} {
  if (trace_events > 0) {
    trace_ = std::make_unique<trace_recorder>(trace_events);
  }
  ring_history_.reserve(stats::ring_history_capacity);
}

// ---- workers ------------------------------------------------------------------------------------

void loader_metrics::read_started(unsigned worker, slot const& s, std::size_t index,
                                  std::int64_t now) noexcept {
  auto& me = activity_[worker];
  me.index.store(index, std::memory_order_relaxed);
  me.since_ns.store(now, std::memory_order_relaxed);
  me.on.store(&s, std::memory_order_release);
}

void loader_metrics::read_finished(unsigned worker, std::int64_t begin, std::int64_t end,
                                   std::size_t index, std::size_t sequence) noexcept {
  auto& me = activity_[worker];
  me.on.store(nullptr, std::memory_order_relaxed);
  me.read_time.record_exclusive(end - begin);
  if (trace_) {
    trace_->record(span_kind::read, worker, begin, end, index, sequence);
  }
}

void loader_metrics::slot_waited(unsigned worker, std::int64_t from, std::int64_t to) noexcept {
  activity_[worker].slot_wait_time.record_exclusive(to - from);
  if (trace_) {
    trace_->record(span_kind::slot_wait, worker, from, to);
  }
}

void loader_metrics::batch_completed(unsigned worker, std::int64_t begin, std::int64_t end,
                                     std::size_t sequence, std::size_t delivered) noexcept {
  if (trace_) {
    trace_->record(span_kind::batch_complete, worker, begin, end, sequence, delivered);
  }
}

std::optional<read_in_progress> loader_metrics::oldest_read_on(slot const* s) const noexcept {
  std::optional<read_in_progress> oldest;
  for (unsigned w = 0; w < threads_; ++w) {
    auto const& a = activity_[w];
    if (a.on.load(std::memory_order_acquire) != s) {
      continue;
    }
    auto const since = a.since_ns.load(std::memory_order_relaxed);
    if (!oldest || since < oldest->since_ns) {
      oldest = read_in_progress{w, a.index.load(std::memory_order_relaxed), since};
    }
  }
  return oldest;
}

loader_metrics::totals loader_metrics::totals_now() const noexcept {
  totals total;
  total.consumer_wait_ns = static_cast<std::int64_t>(consumer_wait_time_.total_ns());
  for (unsigned w = 0; w < threads_; ++w) {
    total.read_ns += static_cast<std::int64_t>(activity_[w].read_time.total_ns());
    total.slot_wait_ns += static_cast<std::int64_t>(activity_[w].slot_wait_time.total_ns());
  }
  return total;
}

// ---- the consumer -------------------------------------------------------------------------------

void loader_metrics::record_wait(consumer_wait const& wait) noexcept {
  consumer_wait_time_.record_exclusive(wait.to_ns - wait.from_ns);
  if (trace_) {
    trace_->record(span_kind::consumer_wait, threads_, wait.from_ns, wait.to_ns, wait.at.sequence,
                   wait.at.epoch);
  }
}

void loader_metrics::timed_out(consumer_wait const& wait) {
  record_wait(wait);
}

void loader_metrics::found(std::int64_t to_ns, ring_occupancy seen) {
  ready_sum_.fetch_add(seen.ready, std::memory_order_relaxed);
  auto const t = std::max<std::int64_t>(to_ns - started_ns_, 1);
  if (first_batch_ns_.load(std::memory_order_relaxed) == 0) {
    // Timeouts before it count in its wait too.
    first_wait_ns_.store(static_cast<std::int64_t>(consumer_wait_time_.total_ns()),
                         std::memory_order_relaxed);
    first_batch_ns_.store(t, std::memory_order_release);  // after first_wait_ns_
  }
  if (t < ring_next_ns_) {
    return;  // the common case: no lock
  }
  std::lock_guard const lock{mutex_};
  if (ring_history_.size() == stats::ring_history_capacity) {
    // Full: keep every other sample and halve the rate, so the history spans the whole run.
    for (std::size_t i = 0; 2 * i < ring_history_.size(); ++i) {
      ring_history_[i] = ring_history_[2 * i];
    }
    ring_history_.resize((ring_history_.size() + 1) / 2);
    ring_interval_ns_ *= 2;
  }
  ring_history_.push_back({seconds(t), static_cast<std::uint32_t>(seen.ready),
                           static_cast<std::uint32_t>(seen.leased),
                           static_cast<std::uint32_t>(seen.filling)});
  ring_next_ns_ = t + ring_interval_ns_;
}

void loader_metrics::delivered(consumer_wait const& wait, ring_occupancy seen, lease const& held) {
  record_wait(wait);
  found(wait.to_ns, seen);
  samples_.fetch_add(held.size, std::memory_order_relaxed);
  std::uint64_t const skipped_before =
      skipped_.fetch_add(held.skipped.size(), std::memory_order_relaxed);
  if (!held.skipped.empty()) {
    std::lock_guard const lock{mutex_};
    for (auto index : held.skipped) {
      if (skipped_list_.size() == max_listed_skips_) {
        break;
      }
      skipped_list_.push_back(index);
    }
  }
  batches_.fetch_add(1, std::memory_order_relaxed);
  // Logged with no lock held: say it, but do not flood the log when a whole shard is bad.
  for (std::size_t k = 0; k < held.skipped.size() && skipped_before + k < logged_skips; ++k) {
    logger()->warn("skipped sample {} (epoch {}, batch {}); {} skipped so far", held.skipped[k],
                   held.epoch, held.sequence, skipped_before + k + 1);
  }
}

void loader_metrics::raised(consumer_wait const& wait, ring_occupancy seen) {
  record_wait(wait);
  found(wait.to_ns, seen);
  failed_batches_.fetch_add(1, std::memory_order_relaxed);
}

// ---- reading it ---------------------------------------------------------------------------------

void loader_metrics::add_to(stats& out) const {
  latency_counts reads;
  latency_counts slot_waits;
  for (unsigned w = 0; w < threads_; ++w) {
    activity_[w].read_time.read_into(reads);
    activity_[w].slot_wait_time.read_into(slot_waits);
  }
  out.read = reads.summary();
  out.read_s = out.read.total_s;
  out.samples_read = out.read.count;
  out.slot_wait = slot_waits.summary();
  out.slot_wait_s = out.slot_wait.total_s;
  out.worker_threads = threads_;
  out.wall_s = seconds(steady_ns() - started_ns_);
  // Each counter on its own: a snapshot taken while next() delivers may count a batch in one
  // and not yet in another.
  out.batches = batches_.load(std::memory_order_relaxed);
  out.samples = samples_.load(std::memory_order_relaxed);
  out.skipped = skipped_.load(std::memory_order_relaxed);
  out.failed_batches = failed_batches_.load(std::memory_order_relaxed);
  auto const seen = out.batches + out.failed_batches;  // every next() that added to ready_sum_
  out.ring_ready_mean = seen > 0 ? static_cast<double>(ready_sum_.load(std::memory_order_relaxed)) /
                                       static_cast<double>(seen)
                                 : 0.0;
  latency_counts waits;
  consumer_wait_time_.read_into(waits);
  out.consumer_wait = waits.summary();
  out.consumer_wait_s = out.consumer_wait.total_s;
  out.first_batch_s = seconds(first_batch_ns_.load(std::memory_order_acquire));
  out.first_wait_s = seconds(first_wait_ns_.load(std::memory_order_relaxed));
  std::lock_guard const lock{mutex_};
  out.skipped_indices = skipped_list_;
  out.ring_history = ring_history_;
  out.ring_history_interval_s = seconds(ring_interval_ns_);
}

void expect_tracing(std::size_t trace_events) {
  GPUFEED_EXPECTS(trace_events > 0,
                  "write_trace: tracing is off; set loader_options::trace_events to the number of "
                  "spans to keep (e.g. 100000)");
}

void loader_metrics::write_trace(std::ostream& out) const {
  expect_tracing();
  trace_->write(out, started_ns_, threads_);
}

}  // namespace gpufeed::detail
