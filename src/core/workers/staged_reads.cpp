#include "core/workers/staged_reads.hpp"

#include <utility>

namespace gpufeed::detail {

staged_reads::staged_reads(std::vector<staged_read> reads)
    : reads_{std::move(reads)},
      taken_{std::make_unique<std::atomic<bool>[]>(reads_.size())},
      remaining_{reads_.size()} {}

staged_read* staged_reads::take(std::uint64_t epoch, std::size_t position,
                                std::size_t index) noexcept {
  if (empty()) {
    return nullptr;
  }
  for (std::size_t i = 0; i < reads_.size(); ++i) {
    auto& r = reads_[i];
    if (r.epoch != epoch || r.position != position || r.index != index) {
      continue;
    }
    if (taken_[i].exchange(true, std::memory_order_acq_rel)) {
      return nullptr;
    }
    remaining_.fetch_sub(1, std::memory_order_acq_rel);
    return &r;
  }
  return nullptr;
}

}  // namespace gpufeed::detail
