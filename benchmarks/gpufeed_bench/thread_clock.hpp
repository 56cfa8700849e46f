#pragma once
// The calling thread's own CPU time and context switches: they tell apart a slow call from a
// call during which the thread was not running.

#include <cstdint>

namespace gpufeed::bench {

/// CPU seconds the calling thread has run (CLOCK_THREAD_CPUTIME_ID; a system call).
[[nodiscard]] double thread_cpu_seconds() noexcept;

/// The CPU time an empty thread_cpu_seconds() window reports (the clock's own cost): the median
/// of `samples` windows.
[[nodiscard]] double thread_cpu_clock_overhead_seconds(int samples = 1000);

/// Times the calling thread was descheduled while it could still run (RUSAGE_THREAD nivcsw).
[[nodiscard]] std::uint64_t thread_involuntary_switches() noexcept;

}  // namespace gpufeed::bench
