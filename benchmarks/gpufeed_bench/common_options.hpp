#pragma once
// The flags every subcommand takes, and how they become loader options.

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "bench_json.hpp"
#include "gpufeed/options.hpp"

namespace gpufeed::bench {

/// Registers the option `name` of `command`, written into `value`: `type` names its unit in
/// --help, which also shows the default (the value `value` holds now).
template <class T>
CLI::Option* add_value(CLI::App& command, std::string name, T& value, std::string description,
                       std::string type) {
  return command.add_option(std::move(name), value, std::move(description))
      ->type_name(std::move(type))
      ->capture_default_str();
}

/// `text` cut at each `separator` ("a,,b" gives "a", "", "b").
[[nodiscard]] std::vector<std::string> split(std::string const& text, char separator);

/// Registers --json FILE and --verbose on `command`.
void add_output_options(CLI::App& command, std::string& json_path, bool& verbose);

/// CPUs this process may use; the default worker count.
[[nodiscard]] unsigned default_workers();

struct common_options {
  std::size_t batch_size = 64;
  unsigned workers = default_workers();
  std::size_t prefetch_depth = 4;
  std::size_t batches = 2000;  ///< timed batches per run
  std::string json_path{};     ///< empty: no JSON file
  bool verbose = false;
};

/// Registers --batch-size, --workers, --prefetch-depth, --batches, --json and --verbose on
/// `command`; the values already in `options` are the defaults shown by --help.
void add_common_options(CLI::App& command, common_options& options);

/// The loader options these flags describe (no shuffle, seed 0, rank 0 of 1).
[[nodiscard]] gpufeed::loader_options to_loader_options(common_options const& options);

/// Every option of `command` as parsed, or its default, for a report's "config": under the
/// option's name without the dashes and with '_' for '-', a flag as a boolean, a number as a
/// number, a comma list as an array.
[[nodiscard]] json config_of(CLI::App const& command);

/// Sets the library's log level to "warn" unless --verbose was given.
void apply_log_level(common_options const& options);
/// As above, for a subcommand with its own flags (sweep).
void apply_log_level(bool verbose);

}  // namespace gpufeed::bench
