#pragma once
// What the host offers the loader: usable CPUs, physical memory, and the pinned-memory budget a
// CUDA ring must fit in. One place for each rule, used by the CUDA stage, the autotuner, the
// monitor and the benchmarks.

#include <cstddef>
#include <optional>

#include "gpufeed/options.hpp"

namespace gpufeed::detail {

/// CPUs this process may run on (its affinity mask, else hardware_concurrency), at least 1; or
/// the count a scoped_usable_cpus in force says.
[[nodiscard]] unsigned usable_cpus() noexcept;

/// Makes usable_cpus() return `count` for its life, in the whole process: for tests of what
/// depends on the machine's size (the autotuner's start) to run as on a machine of any size.
class scoped_usable_cpus {
 public:
  explicit scoped_usable_cpus(unsigned count) noexcept;
  ~scoped_usable_cpus();
  scoped_usable_cpus(scoped_usable_cpus const&) = delete;
  scoped_usable_cpus& operator=(scoped_usable_cpus const&) = delete;

 private:
  unsigned previous_;
};

/// The machine's physical memory in bytes (0 if unknown).
[[nodiscard]] std::size_t physical_memory_bytes() noexcept;

/// The most page-locked memory a ring may take under `options`: `pinned_budget`, else half the
/// physical memory. Empty when nothing is pinned (the host path, or pageable staging).
[[nodiscard]] std::optional<std::size_t> pinned_budget(loader_options const& options) noexcept;

}  // namespace gpufeed::detail
