#include "core/metrics/trace_recorder.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "core/metrics/json_text.hpp"

namespace gpufeed::detail {

namespace {
struct span {
  span_kind kind;
  std::uint32_t tid;
  std::int64_t begin_ns;
  std::int64_t duration_ns;
  std::uint64_t arg0;
  std::uint64_t arg1;
};

char const* name_of(span_kind kind) noexcept {
  switch (kind) {
    case span_kind::read:
      return "read";
    case span_kind::slot_wait:
      return "slot wait";
    case span_kind::batch_complete:
      return "batch complete";
    case span_kind::consumer_wait:
      return "consumer wait";
  }
  return "unknown";
}

void append_microseconds(std::string& out, std::int64_t ns) {
  char text[48];
  std::snprintf(text, sizeof text, "%.3f", static_cast<double>(ns) * 1e-3);
  out += text;
}

void append_args(std::string& out, span const& s) {
  char text[96];
  switch (s.kind) {
    case span_kind::read:
      std::snprintf(text, sizeof text, "{\"index\":%" PRIu64 ",\"batch\":%" PRIu64 "}", s.arg0,
                    s.arg1);
      break;
    case span_kind::batch_complete:
      std::snprintf(text, sizeof text, "{\"batch\":%" PRIu64 ",\"samples\":%" PRIu64 "}", s.arg0,
                    s.arg1);
      break;
    case span_kind::consumer_wait:
      std::snprintf(text, sizeof text, "{\"batch\":%" PRIu64 ",\"epoch\":%" PRIu64 "}", s.arg0,
                    s.arg1);
      break;
    default:
      std::snprintf(text, sizeof text, "{}");
  }
  out += text;
}

// What a trace's otherData says of the recorder.
struct counts {
  std::size_t kept;
  std::uint64_t recorded;
  std::uint64_t dropped;
  std::size_t capacity;
};

void write_spans(std::ostream& out, std::vector<span> const& spans, std::int64_t origin_ns,
                 unsigned workers, counts const& c) {
  std::string text = "{\"traceEvents\":[";
  auto const thread_name = [&](unsigned tid, std::string const& name) {
    text += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" + std::to_string(tid) +
            ",\"args\":{\"name\":";
    append_json_string(text, name);
    text += "}},";
  };
  text +=
      "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":"
      "\"gpufeed loader\"}},";
  for (unsigned w = 0; w < workers; ++w) {
    thread_name(w, "worker " + std::to_string(w));
  }
  thread_name(workers, "consumer");
  for (auto const& s : spans) {
    text += "{\"name\":\"";
    text += name_of(s.kind);
    text += "\",\"cat\":\"gpufeed\",\"ph\":\"X\",\"ts\":";
    append_microseconds(text, s.begin_ns - origin_ns);
    text += ",\"dur\":";
    append_microseconds(text, std::max<std::int64_t>(s.duration_ns, 0));
    text += ",\"pid\":1,\"tid\":" + std::to_string(s.tid) + ",\"args\":";
    append_args(text, s);
    text += "},";
  }
  text.pop_back();  // the last comma (there is always the process name)
  text += "],\"displayTimeUnit\":\"ms\",\"otherData\":{\"spans_kept\":" + std::to_string(c.kept) +
          ",\"spans_recorded\":" + std::to_string(c.recorded) +
          ",\"spans_dropped\":" + std::to_string(c.dropped) +
          ",\"capacity\":" + std::to_string(c.capacity) + "}}\n";
  out << text;
}
}  // namespace

bool trace_recorder::entry::claim(std::uint64_t n) noexcept {
  // One writer at a time, and never over a newer span: two writers' stores interleaved in one
  // entry would read back as a span neither recorded, and an older span arriving late (its
  // writer was preempted for a lap of the ring) must not replace a newer one.
  auto const claimed = 2 * n + 1;
  auto held = sequence.load(std::memory_order_relaxed);
  do {
    if (held % 2 == 1 || held > claimed) {
      return false;
    }
  } while (!sequence.compare_exchange_weak(held, claimed, std::memory_order_relaxed));
  return true;
}

void trace_recorder::entry::publish(std::uint64_t n) noexcept {
  sequence.store(2 * n + 2, std::memory_order_release);
}

trace_recorder::trace_recorder(std::size_t capacity)
    : capacity_{std::max<std::size_t>(capacity, 1)},
      entries_{std::make_unique<entry[]>(capacity_)} {}

void trace_recorder::record(span_kind kind, std::uint32_t tid, std::int64_t begin_ns,
                            std::int64_t end_ns, std::uint64_t arg0, std::uint64_t arg1) noexcept {
  auto const n = next_.fetch_add(1, std::memory_order_relaxed);
  auto& e = entries_[n % capacity_];
  if (!e.claim(n)) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::atomic_thread_fence(std::memory_order_release);
  e.kind_tid.store((std::uint64_t{static_cast<std::uint8_t>(kind)} << 32) | tid,
                   std::memory_order_relaxed);
  e.begin_ns.store(begin_ns, std::memory_order_relaxed);
  e.duration_ns.store(end_ns - begin_ns, std::memory_order_relaxed);
  e.arg0.store(arg0, std::memory_order_relaxed);
  e.arg1.store(arg1, std::memory_order_relaxed);
  e.publish(n);
}

void trace_recorder::write(std::ostream& out, std::int64_t origin_ns, unsigned workers) const {
  std::vector<span> spans;
  spans.reserve(capacity_);
  for (std::size_t i = 0; i < capacity_; ++i) {
    auto const& e = entries_[i];
    auto const before = e.sequence.load(std::memory_order_acquire);
    span s{};
    auto const kind_tid = e.kind_tid.load(std::memory_order_relaxed);
    s.kind = static_cast<span_kind>(kind_tid >> 32);
    s.tid = static_cast<std::uint32_t>(kind_tid & 0xffffffffU);
    s.begin_ns = e.begin_ns.load(std::memory_order_relaxed);
    s.duration_ns = e.duration_ns.load(std::memory_order_relaxed);
    s.arg0 = e.arg0.load(std::memory_order_relaxed);
    s.arg1 = e.arg1.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    auto const after = e.sequence.load(std::memory_order_relaxed);
    if (before != 0 && before % 2 == 0 && before == after) {
      spans.push_back(s);
    }
  }
  std::sort(spans.begin(), spans.end(),
            [](span const& a, span const& b) { return a.begin_ns < b.begin_ns; });
  write_spans(out, spans, origin_ns, workers, {spans.size(), recorded(), dropped(), capacity_});
}

void trace_recorder::write_empty(std::ostream& out, std::size_t capacity) {
  write_spans(out, {}, 0, 0, {0, 0, 0, capacity});
}

}  // namespace gpufeed::detail
