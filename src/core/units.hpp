#pragma once
// Small helpers shared by the loader, the CUDA stage and the monitor: a size for messages, a
// clock reading.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace gpufeed::detail {

/// `bytes` as "12.3 MiB", for log lines and error messages.
inline std::string mib_text(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

/// Nanoseconds on the steady clock, for durations measured across threads.
inline std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Nanoseconds as seconds.
[[nodiscard]] constexpr double seconds(std::int64_t ns) noexcept {
  return static_cast<double>(ns) * 1e-9;
}

}  // namespace gpufeed::detail
