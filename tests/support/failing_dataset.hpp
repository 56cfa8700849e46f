#pragma once
// failing_dataset: throws for chosen indices (std::runtime_error, gpufeed::file_error, or a
// non-std type).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "echo_dataset.hpp"
#include "gpufeed/gpufeed.hpp"

namespace gpufeed::test {

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

}  // namespace gpufeed::test
