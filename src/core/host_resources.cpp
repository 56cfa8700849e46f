#include "core/host_resources.hpp"

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace gpufeed::detail {

namespace {
std::atomic<unsigned> cpus_override{0};  // 0: the machine's
}  // namespace

scoped_usable_cpus::scoped_usable_cpus(unsigned count) noexcept
    : previous_{cpus_override.exchange(count)} {}

scoped_usable_cpus::~scoped_usable_cpus() {
  cpus_override.store(previous_);
}

unsigned usable_cpus() noexcept {
  if (auto const faked = cpus_override.load(); faked > 0) return faked;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    if (auto const count = CPU_COUNT(&set); count > 0) return static_cast<unsigned>(count);
  }
  auto const hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? hardware : 1;
}

std::size_t physical_memory_bytes() noexcept {
  auto const pages = sysconf(_SC_PHYS_PAGES);
  auto const page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page)
                               : 0;
}

std::optional<std::size_t> pinned_budget(loader_options const& options) noexcept {
  if (options.target != placement::cuda || options.staging != staging_memory::pinned) {
    return std::nullopt;
  }
  // Pinned pages can never be swapped out: by default at most half of the machine's memory.
  return options.pinned_budget.value_or(physical_memory_bytes() / 2);
}

}  // namespace gpufeed::detail
