#pragma once
// What the loader measures about itself: per-stage latency histograms, what each worker is
// reading now, the consumer's counters, the ring's history, the optional trace, and the stats
// snapshot made of them. Reached through a few hooks: workers call theirs without any lock (each
// writes only its own entry), and the consumer's are counters of its own with no lock, except
// this class's own mutex (never the ring's) for the lists a snapshot copies: the skipped indices
// and the ring's history, touched only when there is a skip or a history sample is due.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <vector>

#include "core/cache_line.hpp"
#include "core/metrics/latency_histogram.hpp"
#include "core/metrics/trace_recorder.hpp"
#include "core/ring/cursor.hpp"
#include "core/ring/lease.hpp"
#include "core/ring/ring.hpp"
#include "gpufeed/stats.hpp"

namespace gpufeed::detail {

/// What one worker is doing and what it has measured; written by that worker only, on a cache
/// line of its own.
struct alignas(cache_line_bytes) worker_activity {
  std::atomic<slot const*> on{nullptr};  // the slot of the read in progress, or null
  std::atomic<std::size_t> index{0};     // the sample being read
  std::atomic<std::int64_t> since_ns{0};
  latency_histogram read_time;       // per dataset::read
  latency_histogram slot_wait_time;  // per idle spell with no free slot
};
static_assert(alignof(worker_activity) == cache_line_bytes);
static_assert(sizeof(worker_activity) % cache_line_bytes == 0, "neighbours never share a line");

/// A read in progress, for the description of what next() waits for.
struct read_in_progress {
  unsigned worker = 0;
  std::size_t index = 0;
  std::int64_t since_ns = 0;  // steady_ns()
};

/// One wait of next() for the batch at `at`, [from_ns, to_ns) in steady_ns().
struct consumer_wait {
  std::int64_t from_ns = 0;
  std::int64_t to_ns = 0;
  cursor at;
};

/// @throws logic_error when `trace_events` (loader_options::trace_events) is 0, saying how to
/// turn tracing on.
void expect_tracing(std::size_t trace_events);

class loader_metrics {
 public:
  /// `threads` workers; `trace_events` spans kept for write_trace (0: none); the first
  /// `max_listed_skips` skipped indices listed.
  loader_metrics(unsigned threads, std::size_t trace_events, std::size_t max_listed_skips);

  // ---- workers: each on its own entry, no lock ----
  void read_started(unsigned worker, slot const& s, std::size_t index, std::int64_t now) noexcept;
  void read_finished(unsigned worker, std::int64_t begin, std::int64_t end, std::size_t index,
                     std::size_t sequence) noexcept;
  /// `worker` was idle because no slot was free, [from, to).
  void slot_waited(unsigned worker, std::int64_t from, std::int64_t to) noexcept;
  /// Whether spans are traced (a batch's completion is then timed).
  [[nodiscard]] bool tracing() const noexcept { return trace_ != nullptr; }
  void batch_completed(unsigned worker, std::int64_t begin, std::int64_t end, std::size_t sequence,
                       std::size_t delivered) noexcept;
  /// The read in progress on `s` that started first, if any.
  [[nodiscard]] std::optional<read_in_progress> oldest_read_on(slot const* s) const noexcept;

  // ---- the consumer: one thread ----
  /// next() gave up waiting (a timeout): the batch is still to come.
  void timed_out(consumer_wait const& wait);
  /// next() delivered `held` after `wait`, the ring as `seen` when it found the batch ready.
  /// Logs the first skipped samples (with no lock held).
  void delivered(consumer_wait const& wait, ring_occupancy seen, lease const& held);
  /// next() found its batch but raised instead of delivering it (a failed sample, a failed
  /// hand-off).
  void raised(consumer_wait const& wait, ring_occupancy seen);
  /// Batches delivered so far.
  [[nodiscard]] std::uint64_t batches() const noexcept {
    return batches_.load(std::memory_order_relaxed);
  }

  /// Totals so far: next()'s waits, and the workers' reads and waits for a free slot, summed.
  struct totals {
    std::int64_t consumer_wait_ns = 0;
    std::int64_t read_ns = 0;
    std::int64_t slot_wait_ns = 0;
  };
  [[nodiscard]] totals totals_now() const noexcept;

  // ---- reading it: any thread ----
  /// Fills the measured fields of `out`: times, histograms, counters, history (not the ring's
  /// current state or settings, which the loader adds).
  void add_to(stats& out) const;
  /// @throws logic_error when tracing is off, saying how to turn it on.
  void expect_tracing() const { detail::expect_tracing(trace_ != nullptr ? 1U : 0U); }
  /// Writes the spans kept as Trace Event Format JSON. @throws as expect_tracing().
  void write_trace(std::ostream& out) const;

 private:
  /// The wait's histogram and trace span (the consumer thread only; no lock).
  void record_wait(consumer_wait const& wait) noexcept;
  /// next() found its batch at `to_ns` with the ring as `seen`: the mean occupancy, the first
  /// batch's times, and the ring's history (under mutex_, only when a sample is due).
  void found(std::int64_t to_ns, ring_occupancy seen);

  unsigned threads_;
  std::int64_t started_ns_;
  std::unique_ptr<worker_activity[]> activity_;
  std::unique_ptr<trace_recorder> trace_;  // null unless tracing
  std::size_t max_listed_skips_;
  latency_histogram consumer_wait_time_;  // the consumer's waits (one writer); its total is theirs

  // The consumer's counters: written by next() only, read by snapshots, no lock.
  std::atomic<std::uint64_t> batches_{0};
  std::atomic<std::uint64_t> samples_{0};
  std::atomic<std::uint64_t> skipped_{0};
  std::atomic<std::uint64_t> failed_batches_{0};
  std::atomic<std::uint64_t> ready_sum_{0};      // ring_occupancy::ready summed over next()s
  std::atomic<std::int64_t> first_batch_ns_{0};  // since construction; 0 until the first batch
  std::atomic<std::int64_t> first_wait_ns_{0};   // written before first_batch_ns_
  std::int64_t ring_next_ns_ = 0;                // since construction; the consumer's own (no lock)

  mutable std::mutex mutex_;  // guards what follows; never held with the ring's mutex
  std::vector<std::size_t> skipped_list_;
  std::vector<ring_sample> ring_history_;  // capacity reserved at construction
  std::int64_t ring_interval_ns_;
};

}  // namespace gpufeed::detail
