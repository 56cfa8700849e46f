#pragma once
// `gpufeed-bench memcpy`: the loader over an in-memory dataset, where every read is one memcpy,
// next to this machine's own memcpy bandwidth for the same copies (memcpy_peak.hpp).
// Goal: the loader reaches at least 70 % of the peak.

#include <cstddef>
#include <cstdint>
#include <iosfwd>

#include "common_options.hpp"
#include "json_report.hpp"

namespace CLI {
class App;
}

namespace gpufeed::bench {

struct memcpy_config {
  common_options common;
  std::size_t sample_bytes = 224 * 224 * 3;  ///< one uint8 ImageNet-sized image
  std::size_t source_mib = 512;              ///< size of the in-memory dataset
  std::size_t repeats = 7;                   ///< peak/loader pairs, interleaved
  std::size_t warmup = 8;                    ///< untimed batches before each timed run
  bool shuffle = false;
  std::uint64_t seed = 0;
};

/// Registers the `memcpy` subcommand and its flags, which write into `config`.
CLI::App* add_memcpy_command(CLI::App& app, memcpy_config& config);

/// Runs the benchmark, printing one line per repeat to `progress`.
/// @throws std::exception on bad settings or a loader error.
[[nodiscard]] report run_memcpy(memcpy_config const& config, std::ostream& progress);

}  // namespace gpufeed::bench
