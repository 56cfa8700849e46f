#pragma once
// echo_dataset: every sample says who it is (its index, the read context, an index-derived
// payload), so a batch's content can be checked against batch::indices(); sleepy_dataset sleeps a
// per-index amount, to force out-of-order completion.

#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "gpufeed/gpufeed.hpp"
#include "lifetime_counter.hpp"

namespace gpufeed::test {

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

}  // namespace gpufeed::test
