#pragma once
// How a subcommand is registered: its help texts, the flags every subcommand takes, the shapes of
// flag several share (lists, choices, --repeats and --warmup), and how the flags become loader
// options.

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>
#include <utility>
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

/// Registers `name`, a comma-separated list written into `values`, as add_value does.
template <class T>
CLI::Option* add_list(CLI::App& command, std::string name, std::vector<T>& values,
                      std::string description, std::string type) {
  return add_value(command, std::move(name), values, std::move(description), std::move(type))
      ->delimiter(',');
}

/// `text` cut at each `separator` ("a,,b" gives "a", "", "b").
[[nodiscard]] std::vector<std::string> split(std::string const& text, char separator);

/// Registers `name`, one of `choices`, as add_value does.
CLI::Option* add_choice(CLI::App& command, std::string name, std::string& value,
                        std::string description, std::string type,
                        std::vector<std::string> choices);
/// As above, for a comma-separated list of choices.
CLI::Option* add_choice(CLI::App& command, std::string name, std::vector<std::string>& value,
                        std::string description, std::string type,
                        std::vector<std::string> choices);

/// Registers --repeats N (1 to 1000): how many times a subcommand measures, `description` saying
/// what one repeat runs and which statistic the report takes over them.
CLI::Option* add_repeats_option(CLI::App& command, std::size_t& repeats, std::string description);

/// Registers --repeats, as above, then --warmup N, untimed batches (or steps) before each timed
/// run, explained by `warmup_description`.
void add_repeat_options(CLI::App& command, std::size_t& repeats, std::string repeats_description,
                        std::size_t& warmup, std::string warmup_description);

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

/// The texts of a subcommand's --help: the line under its name in the tool's list, the footer
/// that says how it measures, and the description of each flag of add_common_options that the
/// subcommand uses its own way (empty: the common one).
struct command_help {
  std::string name;
  std::string description;
  std::string footer;
  std::string batch_size{};
  std::string workers{};
  std::string batches{};
};

/// Adds the subcommand `help.name` to `app`, with its help texts.
CLI::App* add_command(CLI::App& app, command_help const& help);
/// As above, with the flags of add_common_options, which write into `options`.
CLI::App* add_command(CLI::App& app, command_help const& help, common_options& options);

/// The loader options these flags describe (no shuffle, seed 0, rank 0 of 1).
[[nodiscard]] gpufeed::loader_options to_loader_options(common_options const& options);

/// Every option of `command` as parsed, or its default, for a report's "config": under the
/// option's name without the dashes and with '_' for '-', a flag as a boolean, a number as a
/// number, a comma list as an array.
[[nodiscard]] json config_of(CLI::App const& command);

/// Sets the library's log level to "warn" unless --verbose was given.
void apply_log_level(bool verbose);

}  // namespace gpufeed::bench
