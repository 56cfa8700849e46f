#pragma once
// The one clock every measurement uses: monotonic, and cheap to read (vDSO) on Linux.

#include <chrono>

namespace gpufeed::bench {

using bench_clock = std::chrono::steady_clock;

/// Seconds from `from` to `to`.
[[nodiscard]] inline double seconds_between(bench_clock::time_point from,
                                            bench_clock::time_point to) noexcept {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace gpufeed::bench
