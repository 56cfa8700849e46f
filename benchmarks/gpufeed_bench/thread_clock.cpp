#include "thread_clock.hpp"

#include <sys/resource.h>

#include <ctime>
#include <utility>
#include <vector>

#include "summary_stats.hpp"

namespace gpufeed::bench {

double thread_cpu_seconds() noexcept {
  timespec now{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return 0.0;
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

double thread_cpu_clock_overhead_seconds(int samples) {
  std::vector<double> windows;
  windows.reserve(static_cast<std::size_t>(samples));
  for (int i = 0; i < samples; ++i) {
    double const start = thread_cpu_seconds();
    windows.push_back(thread_cpu_seconds() - start);
  }
  return median(std::move(windows));
}

std::uint64_t thread_involuntary_switches() noexcept {
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
  return static_cast<std::uint64_t>(usage.ru_nivcsw);
}

}  // namespace gpufeed::bench
