#include "thread_clock.hpp"

#include <sys/resource.h>

#include <utility>
#include <vector>

#include "gpufeed/detail/units.hpp"
#include "summary_stats.hpp"

namespace gpufeed::bench {

double thread_cpu_seconds() noexcept {
  return detail::thread_cpu_s();
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
