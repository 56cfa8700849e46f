#pragma once
// `gpufeed-bench h2d`: the loader's host-to-device throughput on the CUDA path, next to a plain
// loop of pinned cudaMemcpyAsync of the same bytes (h2d_peak.hpp), for several batch sizes.
// The dataset writes nothing, so the loader is bound by its copies and its own overhead.
// Goal: the loader reaches at least 90 % of the peak for batches of 4 MiB and more.

#include <cstddef>
#include <iosfwd>
#include <vector>

#include "common_options.hpp"
#include "json_report.hpp"

namespace CLI {
class App;
}

namespace gpufeed::bench {

struct h2d_config {
  common_options common{.workers = 8};                  ///< --batches is replaced by --run-mib
  std::vector<std::size_t> batch_mib = {1, 4, 16, 64};  ///< bytes per batch, one run each
  std::size_t run_mib = 4096;                           ///< bytes each timed run moves
  std::size_t warmup_mib = 512;                         ///< untimed bytes before each timed run
  std::size_t repeats = 5;                              ///< peak/loader pairs, interleaved
  int device = 0;
};

/// Registers the `h2d` subcommand and its flags, which write into `config`.
CLI::App* add_h2d_command(CLI::App& app, h2d_config& config);

/// Runs the benchmark, printing one line per repeat to `progress`.
/// @throws std::runtime_error "no CUDA device: ..." without a device; std::exception on bad
/// settings or a loader error.
[[nodiscard]] report run_h2d(h2d_config const& config, std::ostream& progress);

}  // namespace gpufeed::bench
