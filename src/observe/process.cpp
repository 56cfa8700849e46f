#include "gpufeed/observe/process.hpp"

#include <sys/resource.h>
#include <time.h>  // NOLINT(modernize-deprecated-headers): clock_gettime is POSIX, not <ctime>

#include "core/host_resources.hpp"
#include "gpufeed/observe/proc_stat.hpp"

namespace gpufeed::observe {

unsigned usable_cpus() noexcept {
  return detail::usable_cpus();  // the core's rule, so that the monitor and auto_workers agree
}

double thread_cpu_seconds() noexcept {
  timespec now{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return 0.0;
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

std::uint64_t thread_involuntary_switches() noexcept {
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
  return static_cast<std::uint64_t>(usage.ru_nivcsw);
}

std::optional<std::uint64_t> peak_rss_bytes() {
  auto const status = read_proc_file("/proc/self/status");
  if (!status) return std::nullopt;
  return parse_kb_field(*status, "VmHWM");
}

}  // namespace gpufeed::observe
