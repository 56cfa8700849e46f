#pragma once
// An opt-in, bounded recorder of the loader's stage spans, written out in the Trace Event
// Format that chrome://tracing and Perfetto (ui.perfetto.dev) open.
//
// It keeps the last `capacity` spans in a ring allocated once. Recording is one fetch_add on a
// shared counter and a few relaxed stores into the span's entry, guarded by a per-entry
// sequence number (a seqlock), so that writing the trace while the loader runs never reads a
// half-written span; a span being written, or overwritten, while it is read is left out. One
// writer at a time claims an entry: a span whose entry is being written by another thread (one
// `capacity` spans ahead or behind) is dropped and counted, never mixed with the other.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>

namespace gpufeed::detail {

/// What a span measured.
enum class span_kind : std::uint8_t {
  read,            ///< dataset::read of one sample (args: index, batch)
  slot_wait,       ///< a worker idle because no slot was free
  batch_complete,  ///< the last read's worker closing a batch (and enqueueing its copy)
  consumer_wait,   ///< next() waiting for a batch (args: batch, epoch)
};

class trace_recorder {
 public:
  /// Allocates `capacity` (> 0) entries.
  explicit trace_recorder(std::size_t capacity);

  /// Records one span on thread `tid` (a worker's number; the consumer is `workers`).
  void record(span_kind kind, std::uint32_t tid, std::int64_t begin_ns, std::int64_t end_ns,
              std::uint64_t arg0 = 0, std::uint64_t arg1 = 0) noexcept;

  /// Writes the spans kept, oldest first, as a Trace Event Format JSON object. Timestamps are
  /// microseconds since `origin_ns` (steady clock); threads 0 .. workers - 1 are named
  /// "worker N", thread `workers` "consumer". Safe while others record.
  void write(std::ostream& out, std::int64_t origin_ns, unsigned workers) const;
  /// The trace of a recorder of `capacity` spans that has recorded none (a loader's before its
  /// first batch), without allocating one.
  static void write_empty(std::ostream& out, std::size_t capacity);

  /// Spans recorded so far, those overwritten or dropped included.
  [[nodiscard]] std::uint64_t recorded() const noexcept {
    return next_.load(std::memory_order_relaxed);
  }
  /// Spans dropped because another thread was writing their entry, or a later span (a lap of
  /// the ring ahead) had taken it.
  [[nodiscard]] std::uint64_t dropped() const noexcept {
    return dropped_.load(std::memory_order_relaxed);
  }

  /// One span's storage, guarded by its sequence number (0: empty; 2 (n + 1): span n written;
  /// odd: a writer holds it).
  struct entry {
    /// Takes the entry for span `n`. False (the caller writes nothing) while another writer
    /// holds it, or once it holds a later span.
    bool claim(std::uint64_t n) noexcept;
    /// Marks span `n` written, after claim(n) and the field stores.
    void publish(std::uint64_t n) noexcept;

    std::atomic<std::uint64_t> sequence{0};
    std::atomic<std::uint64_t> kind_tid{0};
    std::atomic<std::int64_t> begin_ns{0};
    std::atomic<std::int64_t> duration_ns{0};
    std::atomic<std::uint64_t> arg0{0};
    std::atomic<std::uint64_t> arg1{0};
  };

 private:
  std::size_t capacity_;
  std::unique_ptr<entry[]> entries_;
  std::atomic<std::uint64_t> next_{0};
  std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace gpufeed::detail
