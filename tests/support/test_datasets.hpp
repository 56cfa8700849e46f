#pragma once
// Test doubles and helpers shared by gpufeed's suites (header-only).
//
// - echo_dataset: every sample says who it is (its index, the read context, an index-derived
//   payload), so a batch's content can be checked against batch::indices().
// - sleepy_dataset: sleeps a per-index amount, to force out-of-order completion.
// - failing_dataset: throws for chosen indices (std::runtime_error, gpufeed::file_error, or a
//   non-std type).
// - gated_dataset + gate: blocks chosen reads until the gate opens (optionally honouring
//   read_context::stop_requested()).
// - lifetime_counter: counts live instances, for leak checks.
// - process probes: threads (/proc/self/task), open fds (/proc/self/fd), RSS (VmRSS).
// - reference_plan: an independent, brute-force cut of an epoch into batches and steps.
// - nested_message: the message of the exception nested in a sample_error.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "gpufeed/gpufeed.hpp"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define GPUFEED_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define GPUFEED_TEST_SANITIZED 1
#endif
#endif
#ifndef GPUFEED_TEST_SANITIZED
#define GPUFEED_TEST_SANITIZED 0
#endif

namespace gpufeed::test {

/// True in ThreadSanitizer / AddressSanitizer builds, where loops are scaled down.
inline constexpr bool sanitized = GPUFEED_TEST_SANITIZED != 0;

/// `normal` iterations, or `under_sanitizer` in a sanitizer build.
constexpr std::size_t scaled(std::size_t normal, std::size_t under_sanitizer) noexcept {
  return sanitized ? under_sanitizer : normal;
}

// ------------------------------------------------------------------------------------------------
// Lifetime counting.

/// Counts live instances per `Tag` (SPSCQueue's TestType idea): embed one in an object and check
/// that alive() returns to its baseline once every owner is gone.
template <class Tag>
class lifetime_counter {
 public:
  lifetime_counter() noexcept { add(); }
  lifetime_counter(lifetime_counter const&) noexcept { add(); }
  lifetime_counter(lifetime_counter&&) noexcept { add(); }
  lifetime_counter& operator=(lifetime_counter const&) noexcept = default;
  lifetime_counter& operator=(lifetime_counter&&) noexcept = default;
  ~lifetime_counter() { alive_.fetch_sub(1, std::memory_order_acq_rel); }

  [[nodiscard]] static long alive() noexcept { return alive_.load(std::memory_order_acquire); }
  [[nodiscard]] static long constructed() noexcept {
    return constructed_.load(std::memory_order_acquire);
  }

 private:
  static void add() noexcept {
    alive_.fetch_add(1, std::memory_order_acq_rel);
    constructed_.fetch_add(1, std::memory_order_acq_rel);
  }
  static inline std::atomic<long> alive_{0};
  static inline std::atomic<long> constructed_{0};
};

// ------------------------------------------------------------------------------------------------
// Index-echo dataset.

/// The payload byte `j` of sample `index`: a pattern that differs between neighbouring samples.
constexpr std::uint8_t payload_byte(std::size_t index, std::size_t j) noexcept {
  return static_cast<std::uint8_t>((index * 131U + j * 7U + 3U) & 0xffU);
}

/// Every sample echoes itself:
///   field 0 "index"   int64 []   the sample's index
///   field 1 "context" int64 [3]  the read_context's epoch, worker and seed (bit pattern)
///   field 2 "payload" uint8 [P]  payload_byte(index, j), only when P > 0
/// It also counts how often each (epoch, index) was read to completion.
class echo_dataset : public gpufeed::dataset {
 public:
  static constexpr std::size_t index_field = 0;
  static constexpr std::size_t context_field = 1;
  static constexpr std::size_t payload_field = 2;

  explicit echo_dataset(std::size_t size, std::size_t payload_bytes = 0)
      : size_{size}, payload_bytes_{payload_bytes} {}

  [[nodiscard]] std::size_t size() const override { return size_; }
  [[nodiscard]] gpufeed::sample_spec spec() const override {
    gpufeed::sample_spec s;
    s.add("index", gpufeed::dtype::i64, {}).add("context", gpufeed::dtype::i64, {3});
    if (payload_bytes_ > 0) {
      s.add("payload", gpufeed::dtype::u8, {static_cast<std::int64_t>(payload_bytes_)});
    }
    return s;
  }

  void read(std::size_t index, gpufeed::sample_view out,
            gpufeed::read_context const& ctx) const override {
    if (index >= size_) {
      bad_index_.fetch_add(1, std::memory_order_relaxed);
      throw std::out_of_range{"echo_dataset: index " + std::to_string(index) + " out of range"};
    }
    if (ctx.index != index) bad_context_.fetch_add(1, std::memory_order_relaxed);
    before_read(index, ctx);
    out.as<std::int64_t>(index_field)[0] = static_cast<std::int64_t>(index);
    auto context = out.as<std::int64_t>(context_field);
    context[0] = static_cast<std::int64_t>(ctx.epoch);
    context[1] = static_cast<std::int64_t>(ctx.worker);
    context[2] = std::bit_cast<std::int64_t>(ctx.seed);
    if (payload_bytes_ > 0) {
      auto payload = out.as<std::uint8_t>(payload_field);
      for (std::size_t j = 0; j < payload.size(); ++j) payload[j] = payload_byte(index, j);
    }
    std::lock_guard lock{mutex_};
    ++reads_[{ctx.epoch, index}];
    ++total_reads_;
  }

  [[nodiscard]] std::size_t payload_bytes() const noexcept { return payload_bytes_; }
  /// Reads of `index` in `epoch` that returned normally.
  [[nodiscard]] std::size_t reads(std::uint64_t epoch, std::size_t index) const {
    std::lock_guard lock{mutex_};
    auto it = reads_.find({epoch, index});
    return it == reads_.end() ? 0 : it->second;
  }
  [[nodiscard]] std::size_t total_reads() const {
    std::lock_guard lock{mutex_};
    return total_reads_;
  }
  /// read() calls with an index past size() (a loader bug).
  [[nodiscard]] std::size_t bad_indices() const noexcept { return bad_index_.load(); }
  /// read() calls whose ctx.index disagreed with the index argument (a loader bug).
  [[nodiscard]] std::size_t bad_contexts() const noexcept { return bad_context_.load(); }

 protected:
  /// Hook for the doubles below: sleep, throw or block before the sample is written.
  virtual void before_read(std::size_t /*index*/, gpufeed::read_context const& /*ctx*/) const {}

 private:
  std::size_t size_;
  std::size_t payload_bytes_;
  mutable std::mutex mutex_;
  mutable std::map<std::pair<std::uint64_t, std::size_t>, std::size_t> reads_;
  mutable std::size_t total_reads_ = 0;
  mutable std::atomic<std::size_t> bad_index_{0};
  mutable std::atomic<std::size_t> bad_context_{0};
  lifetime_counter<echo_dataset> counter_;
};

/// Sleeps `delay(index)` before each read: with earlier indices sleeping longer, later samples
/// complete first, so the loader must reorder.
class sleepy_dataset final : public echo_dataset {
 public:
  using delay_fn = std::function<std::chrono::microseconds(std::size_t)>;
  sleepy_dataset(std::size_t size, delay_fn delay, std::size_t payload_bytes = 0)
      : echo_dataset{size, payload_bytes}, delay_{std::move(delay)} {}

 protected:
  void before_read(std::size_t index, gpufeed::read_context const& /*ctx*/) const override {
    auto d = delay_(index);
    if (d.count() > 0) std::this_thread::sleep_for(d);
  }

 private:
  delay_fn delay_;
};

/// What failing_dataset throws.
enum class failure_kind { runtime, file, non_std };

/// The message failing_dataset's exceptions carry for `index`.
inline std::string failure_message(std::size_t index) {
  return "bad sample " + std::to_string(index) + " (test double)";
}
/// The path failing_dataset's file_error names for `index`.
inline std::string failure_path(std::size_t index) {
  return "/data/shard-" + std::to_string(index) + ".bin";
}

/// Throws for the indices in `failing`, in every epoch or only in `only_epoch`.
class failing_dataset final : public echo_dataset {
 public:
  failing_dataset(std::size_t size, std::set<std::size_t> failing,
                  failure_kind kind = failure_kind::runtime, std::size_t payload_bytes = 0,
                  std::optional<std::uint64_t> only_epoch = std::nullopt)
      : echo_dataset{size, payload_bytes},
        failing_{std::move(failing)},
        kind_{kind},
        only_epoch_{only_epoch} {}

  [[nodiscard]] std::set<std::size_t> const& failing() const noexcept { return failing_; }
  [[nodiscard]] std::size_t throws() const noexcept { return throws_.load(); }

 protected:
  void before_read(std::size_t index, gpufeed::read_context const& ctx) const override {
    if (!failing_.contains(index)) return;
    if (only_epoch_ && ctx.epoch != *only_epoch_) return;
    throws_.fetch_add(1, std::memory_order_relaxed);
    switch (kind_) {
      case failure_kind::runtime:
        throw std::runtime_error{failure_message(index)};
      case failure_kind::file:
        throw gpufeed::file_error{failure_path(index), failure_message(index)};
      case failure_kind::non_std:
        throw static_cast<int>(index);
    }
  }

 private:
  std::set<std::size_t> failing_;
  failure_kind kind_;
  std::optional<std::uint64_t> only_epoch_;
  mutable std::atomic<std::size_t> throws_{0};
};

/// A latch that reads wait on until a test opens it.
class gate {
 public:
  void open() {
    {
      std::lock_guard lock{mutex_};
      open_ = true;
    }
    cv_.notify_all();
  }
  [[nodiscard]] bool is_open() const {
    std::lock_guard lock{mutex_};
    return open_;
  }

  /// Blocks until the gate opens; when `honour_stop`, also returns (false) once the loader asks
  /// the read to stop. The stop flag has no wake-up of its own, so it is polled every 200 us.
  bool pass(gpufeed::read_context const& ctx, bool honour_stop) {
    std::unique_lock lock{mutex_};
    ++entered_;
    cv_.notify_all();
    while (!open_) {
      if (honour_stop && ctx.stop_requested()) {
        ++stopped_;
        cv_.notify_all();
        return false;
      }
      if (honour_stop) {
        cv_.wait_for(lock, std::chrono::microseconds{200});
      } else {
        cv_.wait(lock);
      }
    }
    return true;
  }

  /// Waits (up to `limit`) until at least `count` reads have arrived at the gate.
  bool wait_entered(std::size_t count, std::chrono::seconds limit = std::chrono::seconds{20}) {
    std::unique_lock lock{mutex_};
    return cv_.wait_for(lock, limit, [&] { return entered_ >= count; });
  }
  [[nodiscard]] std::size_t entered() const {
    std::lock_guard lock{mutex_};
    return entered_;
  }
  /// Reads that gave up because stop_requested() became true.
  [[nodiscard]] std::size_t stopped() const {
    std::lock_guard lock{mutex_};
    return stopped_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
  std::size_t entered_ = 0;
  std::size_t stopped_ = 0;
};

/// Blocks the reads of `blocked` indices (all indices when empty) at a gate.
class gated_dataset final : public echo_dataset {
 public:
  gated_dataset(std::size_t size, std::shared_ptr<gate> g, std::set<std::size_t> blocked = {},
                bool honour_stop = true)
      : echo_dataset{size},
        gate_{std::move(g)},
        blocked_{std::move(blocked)},
        honour_stop_{honour_stop} {}

 protected:
  void before_read(std::size_t index, gpufeed::read_context const& ctx) const override {
    if (!blocked_.empty() && !blocked_.contains(index)) return;
    (void)gate_->pass(ctx, honour_stop_);
  }

 private:
  std::shared_ptr<gate> gate_;
  std::set<std::size_t> blocked_;
  bool honour_stop_;
};

// ------------------------------------------------------------------------------------------------
// Batch checks.

/// The values of an int64 scalar-per-sample field as size_t.
inline std::vector<std::size_t> index_column(gpufeed::batch const& b) {
  auto values = b.field("index").as<std::int64_t>();
  std::vector<std::size_t> out;
  out.reserve(values.size());
  for (auto v : values) out.push_back(static_cast<std::size_t>(v));
  return out;
}

/// Checks that `b` holds what an echo_dataset wrote for b.indices(): sizes agree, each row's
/// index, epoch and payload match.
inline ::testing::AssertionResult echo_content_matches(gpufeed::batch const& b,
                                                       std::size_t payload_bytes) {
  if (!b) return ::testing::AssertionFailure() << "empty batch";
  auto idx = b.indices();
  if (idx.size() != b.size()) {
    return ::testing::AssertionFailure() << "batch " << b.sequence() << ": size() " << b.size()
                                         << " but indices() has " << idx.size();
  }
  auto const index = b.field("index");
  if (index.rank() != 1 || index.shape()[0] != static_cast<std::int64_t>(b.size())) {
    return ::testing::AssertionFailure()
           << "batch " << b.sequence() << ": field 'index' has rank " << index.rank()
           << " and leading dim " << (index.rank() > 0 ? index.shape()[0] : -1) << ", want ["
           << b.size() << "]";
  }
  auto values = index.as<std::int64_t>();
  auto context = b.field("context").as<std::int64_t>();
  if (values.size() != b.size() || context.size() != 3 * b.size()) {
    return ::testing::AssertionFailure() << "batch " << b.sequence() << ": field sizes "
                                         << values.size() << ", " << context.size();
  }
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (values[i] != static_cast<std::int64_t>(idx[i])) {
      return ::testing::AssertionFailure()
             << "batch " << b.sequence() << " row " << i << ": content says index " << values[i]
             << ", indices() says " << idx[i];
    }
    if (context[3 * i] != static_cast<std::int64_t>(b.epoch())) {
      return ::testing::AssertionFailure()
             << "batch " << b.sequence() << " row " << i << ": read in epoch " << context[3 * i]
             << ", batch epoch " << b.epoch();
    }
  }
  if (payload_bytes > 0) {
    auto payload = b.field("payload").as<std::uint8_t>();
    if (payload.size() != payload_bytes * b.size()) {
      return ::testing::AssertionFailure()
             << "batch " << b.sequence() << ": payload has " << payload.size() << " bytes";
    }
    for (std::size_t i = 0; i < b.size(); ++i) {
      for (std::size_t j = 0; j < payload_bytes; ++j) {
        if (payload[i * payload_bytes + j] != payload_byte(idx[i], j)) {
          return ::testing::AssertionFailure()
                 << "batch " << b.sequence() << " row " << i << " (index " << idx[i]
                 << "): payload byte " << j << " is " << int{payload[i * payload_bytes + j]}
                 << ", want " << int{payload_byte(idx[i], j)};
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

/// What one delivered batch was.
struct batch_record {
  std::uint64_t epoch = 0;
  std::uint64_t sequence = 0;
  std::vector<std::size_t> indices;
  gpufeed::step_info step;
  friend bool operator==(batch_record const&, batch_record const&) = default;
};

inline batch_record record_of(gpufeed::batch const& b) {
  return {b.epoch(), b.sequence(), {b.indices().begin(), b.indices().end()}, b.step()};
}

/// Calls next() until the epoch ends, checking each batch's echo content; returns the records.
inline std::vector<batch_record> drain_epoch(gpufeed::loader& l, std::size_t payload_bytes = 0,
                                             std::size_t limit = 1'000'000) {
  std::vector<batch_record> out;
  while (out.size() < limit) {
    auto b = l.next();
    if (!b) break;
    EXPECT_TRUE(echo_content_matches(*b, payload_bytes));
    out.push_back(record_of(*b));
  }
  return out;
}

/// The indices of the records, concatenated.
inline std::vector<std::size_t> flatten(std::vector<batch_record> const& records) {
  std::vector<std::size_t> out;
  for (auto const& r : records) out.insert(out.end(), r.indices.begin(), r.indices.end());
  return out;
}

inline std::vector<std::vector<std::size_t>> index_lists(std::vector<batch_record> const& rs) {
  std::vector<std::vector<std::size_t>> out;
  out.reserve(rs.size());
  for (auto const& r : rs) out.push_back(r.indices);
  return out;
}

// ------------------------------------------------------------------------------------------------
// Reference arithmetic, written independently of the library.

/// One batch of a reference plan.
struct reference_batch {
  std::size_t first = 0;  // shard position
  std::size_t count = 0;
  gpufeed::step_info step;
};

/// Brute force: cut `shard` positions into batches, apply the tail policies, group into steps.
inline std::vector<reference_batch> reference_plan(std::size_t shard, std::size_t batch_size,
                                                   std::size_t accumulation,
                                                   gpufeed::tail_policy last_batch,
                                                   gpufeed::tail_policy last_step) {
  std::vector<reference_batch> batches;
  std::size_t pos = 0;
  while (pos < shard) {
    std::size_t count = std::min(batch_size, shard - pos);
    if (count < batch_size && last_batch == gpufeed::tail_policy::drop) break;
    batches.push_back({pos, count, {}});
    pos += count;
  }
  // Group into steps of `accumulation` micro-batches, one step at a time.
  std::vector<std::vector<std::size_t>> steps;  // batch numbers per step
  for (std::size_t b = 0; b < batches.size(); ++b) {
    if (steps.empty() || steps.back().size() == accumulation) steps.emplace_back();
    steps.back().push_back(b);
  }
  if (!steps.empty() && steps.back().size() < accumulation &&
      last_step == gpufeed::tail_policy::drop) {
    batches.resize(batches.size() - steps.back().size());
    steps.pop_back();
  }
  for (std::size_t s = 0; s < steps.size(); ++s) {
    std::size_t samples = 0;
    for (auto b : steps[s]) samples += batches[b].count;
    for (std::size_t m = 0; m < steps[s].size(); ++m) {
      auto& info = batches[steps[s][m]].step;
      info.step = s;
      info.micro = m;
      info.micros_in_step = steps[s].size();
      info.samples_in_step = samples;
      info.last_micro = m + 1 == steps[s].size();
      info.short_step = samples < accumulation * batch_size;
    }
  }
  return batches;
}

/// The shard of `rank`: positions rank, rank + W, ... of the whole-epoch order `order`.
inline std::vector<std::size_t> reference_shard(std::vector<std::size_t> const& order,
                                                unsigned rank, unsigned world_size) {
  std::vector<std::size_t> out;
  for (std::size_t p = rank; p < order.size(); p += world_size) out.push_back(order[p]);
  return out;
}

/// The batches (as index lists) a loader must deliver in `epoch`, from the library's sampler
/// order and the reference plan.
inline std::vector<std::vector<std::size_t>> expected_batches(std::size_t n,
                                                              gpufeed::loader_options const& o,
                                                              std::uint64_t epoch) {
  gpufeed::sampler s{n, o.shuffle, o.seed, o.rank.value_or(0), o.world_size.value_or(1)};
  auto order = s.epoch_indices(epoch);
  std::vector<std::vector<std::size_t>> out;
  for (auto const& b : reference_plan(order.size(), o.batch_size, o.accumulation_steps,
                                      o.last_batch, o.last_step)) {
    out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(b.first),
                     order.begin() + static_cast<std::ptrdiff_t>(b.first + b.count));
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// Process probes (Linux).

inline std::size_t count_entries(char const* dir) {
  std::size_t n = 0;
  for (auto const& e : std::filesystem::directory_iterator{dir}) {
    (void)e;
    ++n;
  }
  return n;
}

/// Threads of this process.
inline std::size_t thread_count() {
  return count_entries("/proc/self/task");
}
/// Open file descriptors of this process (including the one used to list them).
inline std::size_t fd_count() {
  return count_entries("/proc/self/fd");
}
/// Resident set size in bytes (VmRSS).
inline std::size_t rss_bytes() {
  std::ifstream status{"/proc/self/status"};
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream in{line.substr(6)};
      std::size_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

/// Polls `done` every millisecond until it holds or `limit` passes; returns its last value.
/// (A bounded wait for a state, never a timing assertion.)
template <class Predicate>
bool eventually(Predicate done, std::chrono::milliseconds limit = std::chrono::seconds{20}) {
  auto const deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
  return true;
}

/// Waits until the process has at most `baseline` threads again (exited threads can linger in
/// /proc for a moment after join); returns the count seen last.
inline std::size_t threads_settled_to(std::size_t baseline) {
  std::size_t seen = thread_count();
  (void)eventually([&] { return (seen = thread_count()) <= baseline; }, std::chrono::seconds{10});
  return seen;
}

/// Waits until `l` has `count` batches ready (the ring is full when count == prefetch_depth).
inline bool wait_ready(gpufeed::loader const& l, std::size_t count) {
  return eventually([&] { return l.snapshot().ring_ready >= count; });
}

/// Sets (or unsets) an environment variable for the lifetime of the guard.
class env_guard {
 public:
  env_guard(char const* name, std::optional<std::string> value) : name_{name} {
    if (char const* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~env_guard() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  env_guard(env_guard const&) = delete;
  env_guard& operator=(env_guard const&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

/// Whether `text` contains `token` not glued to other digits or letters (so "0" does not match
/// inside "4096" or "0x").
inline bool contains_token(std::string_view text, std::string_view token) {
  auto is_word = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  for (auto pos = text.find(token); pos != std::string_view::npos;
       pos = text.find(token, pos + 1)) {
    bool const left_ok = pos == 0 || !is_word(text[pos - 1]);
    bool const right_ok = pos + token.size() == text.size() || !is_word(text[pos + token.size()]);
    if (left_ok && right_ok) return true;
  }
  return false;
}

/// Rethrows the exception nested in `e` (a sample_error's cause) and returns its message;
/// "<nothing nested>" when there is none, "<non-std>" for a non-std exception.
inline std::string nested_message(std::exception const& e) {
  try {
    std::rethrow_if_nested(e);
  } catch (std::exception const& inner) {
    return inner.what();
  } catch (...) {
    return "<non-std>";
  }
  return "<nothing nested>";
}

/// Base options for loader tests: quiet, small, deterministic.
inline gpufeed::loader_options small_options(std::size_t batch_size = 4, unsigned workers = 2) {
  gpufeed::loader_options o;
  o.batch_size = batch_size;
  o.workers = workers;
  o.prefetch_depth = 4;
  o.rank = 0;
  o.world_size = 1;
  return o;
}

}  // namespace gpufeed::test
