#pragma once
// `gpufeed-bench overhead`: the loader's own cost, over a dataset whose reads write nothing.
//
// handoff_us is the consumer's cost of next() + release() per batch in the steady state of a
// loader that keeps up: the consumer holds each batch for a training step (--step-us, asleep, as
// a thread that waits on a GPU is), and meanwhile the workers refill the ring, so next() finds
// its batch ready and release() pays for whatever waking the workers need. Goal: under 10 us,
// on the median over the repeats of each repeat's mean; p50, p99 and the maximum come with it.
// Next to it: the best case (before each measured batch the consumer waits, untimed, until every
// ring slot is ready, so that nothing else goes on), and the wall clock per batch of a consumer
// that calls next() + release() back to back (the workers' per-sample cost included).

#include <cstddef>
#include <iosfwd>

#include "common_options.hpp"
#include "json_report.hpp"

namespace CLI {
class App;
}

namespace gpufeed::bench {

struct overhead_config {
  common_options common{.batches = 5000};
  std::size_t sample_bytes = 4096;  ///< sizes the ring only: nothing is written
  double step_us = 200;             ///< the steady state's training step per batch
  std::size_t repeats = 3;          ///< fresh loader each; the report gives medians
  std::size_t warmup = 200;         ///< untimed batches before each phase
};

/// Registers the `overhead` subcommand and its flags, which write into `config`.
CLI::App* add_overhead_command(CLI::App& app, overhead_config& config);

/// Runs the benchmark, printing one line per repeat to `progress`.
/// @throws std::exception on bad settings or a loader error.
[[nodiscard]] report run_overhead(overhead_config const& config, std::ostream& progress);

}  // namespace gpufeed::bench
