#pragma once
// Samples read before the loader knew its layout (dataset::stage, on the layout probe's
// threads), waiting to be written into their batches. Each is taken once, by the worker that
// claims its position; one that no batch claims (the consumer moved elsewhere) is dropped with
// the loader. The list is filled before the workers start and only taken from afterwards.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "gpufeed/detail/adapted_dataset.hpp"

namespace gpufeed::detail {

/// One staged read: the sample, or what reading it threw.
struct staged_read {
  std::uint64_t epoch = 0;
  std::size_t position = 0;               // shard position in the epoch
  std::size_t index = 0;                  // dataset index (checked again when taken)
  unsigned worker = 0;                    // the probe thread that read it
  std::unique_ptr<staged_sample> sample;  // null when the read failed
  std::exception_ptr failure;
};

class staged_reads {
 public:
  staged_reads() = default;
  explicit staged_reads(std::vector<staged_read> reads);

  /// Whether a read of sample `index` at `position` of `epoch` is staged and not taken yet.
  /// Lock-free; each staged read is returned once. Null when none (at once when all are taken).
  [[nodiscard]] staged_read* take(std::uint64_t epoch, std::size_t position,
                                  std::size_t index) noexcept;
  [[nodiscard]] bool empty() const noexcept {
    return remaining_.load(std::memory_order_acquire) == 0;
  }

 private:
  std::vector<staged_read> reads_;
  std::unique_ptr<std::atomic<bool>[]> taken_;
  std::atomic<std::size_t> remaining_{0};
};

}  // namespace gpufeed::detail
