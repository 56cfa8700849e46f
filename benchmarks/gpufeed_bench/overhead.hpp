#pragma once
// `gpufeed-bench overhead`: the loader's own cost, over a dataset whose reads write nothing.
//
// handoff_us is the consumer's cost of next() + release() for a batch that is already ready:
// before each measured call the consumer waits (untimed) until every ring slot is ready, so
// next() cannot block (a batch whose ring never fills is left out). Goal: under 10 us per batch.
// The streaming phase (next() + release() back to back) gives the wall-clock time per batch, which
// also includes the workers' per-sample cost.

#include <cstddef>
#include <iosfwd>

#include "common_options.hpp"
#include "json_report.hpp"

namespace CLI {
class App;
}

namespace gpufeed::bench {

struct overhead_config {
  common_options common;
  std::size_t sample_bytes = 4096;  ///< sizes the ring only: nothing is written
  std::size_t repeats = 3;          ///< fresh loader each; the report gives medians
  std::size_t warmup = 200;         ///< untimed batches before each phase
};

/// The defaults `gpufeed-bench overhead` runs with.
[[nodiscard]] overhead_config default_overhead_config();

/// Registers the `overhead` subcommand and its flags, which write into `config`.
CLI::App* add_overhead_command(CLI::App& app, overhead_config& config);

/// Runs the benchmark, printing one line per repeat to `progress`.
/// @throws std::exception on bad settings or a loader error.
[[nodiscard]] report run_overhead(overhead_config const& config, std::ostream& progress);

}  // namespace gpufeed::bench
