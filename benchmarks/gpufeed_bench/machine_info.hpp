#pragma once
// The machine a report was measured on.

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "bench_json.hpp"

namespace gpufeed::bench {

struct machine_info {
  unsigned cpus = 0;                     ///< CPUs this process may run on (affinity mask)
  std::optional<std::string> gpu;        ///< the GPU's name; none in a host-only build
  std::string cpu_model;                 ///< /proc/cpuinfo "model name"
  std::uint64_t memory_bytes = 0;        ///< /proc/meminfo MemTotal
  std::string kernel;                    ///< uname release
  std::string boot_id;                   ///< tells apart machines with the same image and kernel
  std::array<double, 3> load_average{};  ///< 1, 5 and 15 minute load when the report was made
};

/// Looks at this machine. Never throws; unknown fields stay empty.
[[nodiscard]] machine_info detect_machine();

[[nodiscard]] json to_json(machine_info const& machine);

}  // namespace gpufeed::bench
