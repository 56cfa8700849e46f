#pragma once
/// @file
/// @brief What this process and its threads use and may use: CPUs, CPU time, context switches,
/// peak memory. Part of `gpufeed::observe` (Linux).
///
/// @code
/// double const cpu0 = gpufeed::observe::thread_cpu_seconds();
/// work();
/// double const cpu_s = gpufeed::observe::thread_cpu_seconds() - cpu0;  // not wall time
/// @endcode
///
/// Thread-safe: each call reads the kernel's counters and keeps nothing.

#include <cstdint>
#include <optional>

namespace gpufeed::observe {

/// @brief CPUs this process may run on: its affinity mask, else the hardware's count; at least
/// 1. The count the loader's `auto_workers` starts from and the monitor reports.
[[nodiscard]] unsigned usable_cpus() noexcept;

/// @brief CPU time the calling thread has run, in seconds (CLOCK_THREAD_CPUTIME_ID, a system
/// call); unlike a wall clock it leaves out the time the thread sleeps or waits for a core.
/// 0 if the clock fails.
[[nodiscard]] double thread_cpu_seconds() noexcept;

/// @brief Times the calling thread was descheduled while it could still run (getrusage's
/// RUSAGE_THREAD `ru_nivcsw`); 0 if the kernel does not say.
[[nodiscard]] std::uint64_t thread_involuntary_switches() noexcept;

/// @brief This process's peak resident memory in bytes (VmHWM of /proc/self/status), or empty
/// where that file cannot be read. Process-wide and never decreasing.
[[nodiscard]] std::optional<std::uint64_t> peak_rss_bytes();

}  // namespace gpufeed::observe
