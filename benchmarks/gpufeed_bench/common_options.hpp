#pragma once
// The flags every subcommand takes, and how they become loader options.

#include <cstddef>
#include <string>

#include "bench_json.hpp"
#include "gpufeed/options.hpp"

namespace CLI {
class App;
}

namespace gpufeed::bench {

struct common_options {
  std::size_t batch_size = 64;
  unsigned workers = 2;
  std::size_t prefetch_depth = 4;
  std::size_t batches = 1000;  ///< timed batches per run
  std::string json_path;       ///< empty: no JSON file
  bool verbose = false;
};

/// Registers --batch-size, --workers, --prefetch-depth, --batches, --json and --verbose on
/// `command`; the values already in `options` are the defaults shown by --help.
void add_common_options(CLI::App& command, common_options& options);

/// The loader options these flags describe (no shuffle, seed 0, rank 0 of 1).
[[nodiscard]] gpufeed::loader_options to_loader_options(common_options const& options);

/// The flags as JSON, for the report's "config".
[[nodiscard]] json to_json(common_options const& options);

/// Sets the library's log level to "warn" unless --verbose was given.
void apply_log_level(common_options const& options);
/// As above, for a subcommand with its own flags (sweep).
void apply_log_level(bool verbose);

/// CPUs this process may use; the default worker count.
[[nodiscard]] unsigned default_workers();

}  // namespace gpufeed::bench
