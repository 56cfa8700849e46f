#pragma once
// Small helpers shared by the loader, the CUDA stage and the monitor: a size for messages, clock
// readings.

#include <time.h>  // NOLINT(modernize-deprecated-headers): clock_gettime is POSIX, not <ctime>

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

/// CPU time the calling thread has run, in seconds (CLOCK_THREAD_CPUTIME_ID: a system call);
/// unlike a wall clock it excludes time the thread sleeps or waits to run. 0 if the clock fails.
inline double thread_cpu_s() noexcept {
  timespec now{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return 0.0;
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

}  // namespace gpufeed::detail
