#pragma once
// lifetime_counter: counts live instances of a type, for leak checks.

#include <atomic>

namespace gpufeed::test {

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

}  // namespace gpufeed::test
