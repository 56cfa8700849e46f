#include "common_options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <utility>
#include <vector>

#include "gpufeed/log.hpp"
#include "gpufeed/observe/process.hpp"

namespace gpufeed::bench {

void add_common_options(CLI::App& command, common_options& options) {
  add_value(command, "--batch-size", options.batch_size,
            "Samples per batch (loader_options::batch_size)", "N")
      ->check(CLI::PositiveNumber);
  add_value(
      command, "--workers", options.workers,
      "Loader worker threads (loader_options::workers; default: the CPUs this process may use)",
      "N")
      ->check(CLI::Range(1U, 1024U));
  add_value(command, "--prefetch-depth", options.prefetch_depth,
            "Slots in the loader's ring: batches prepared ahead, leases included "
            "(loader_options::prefetch_depth)",
            "N")
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}));
  add_value(command, "--batches", options.batches, "Timed batches per run (after the warm-up)", "N")
      ->check(CLI::PositiveNumber);
  add_output_options(command, options.json_path, options.verbose);
}

CLI::App* add_command(CLI::App& app, command_help const& help) {
  CLI::App* command = app.add_subcommand(help.name, help.description);
  command->footer(help.footer);
  return command;
}

CLI::App* add_command(CLI::App& app, command_help const& help, common_options& options) {
  CLI::App* command = add_command(app, help);
  add_common_options(*command, options);
  auto const reword = [command](char const* name, std::string const& description) {
    if (!description.empty()) command->get_option(name)->description(description);
  };
  reword("--batch-size", help.batch_size);
  reword("--workers", help.workers);
  reword("--batches", help.batches);
  return command;
}

CLI::Option* add_choice(CLI::App& command, std::string name, std::string& value,
                        std::string description, std::string type,
                        std::vector<std::string> choices) {
  return add_value(command, std::move(name), value, std::move(description), std::move(type))
      ->check(CLI::IsMember(std::move(choices)));
}

CLI::Option* add_choice(CLI::App& command, std::string name, std::vector<std::string>& value,
                        std::string description, std::string type,
                        std::vector<std::string> choices) {
  return add_list(command, std::move(name), value, std::move(description), std::move(type))
      ->check(CLI::IsMember(std::move(choices)));
}

CLI::Option* add_repeats_option(CLI::App& command, std::size_t& repeats, std::string description) {
  return add_value(command, "--repeats", repeats, std::move(description), "N")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000}));
}

void add_repeat_options(CLI::App& command, std::size_t& repeats, std::string repeats_description,
                        std::size_t& warmup, std::string warmup_description) {
  add_repeats_option(command, repeats, std::move(repeats_description));
  add_value(command, "--warmup", warmup, std::move(warmup_description), "N");
}

void add_output_options(CLI::App& command, std::string& json_path, bool& verbose) {
  command
      .add_option("--json", json_path,
                  "Also write the report as JSON to FILE (schema: docs/benchmarks/schema.json; "
                  "default: none)")
      ->type_name("FILE");
  command.add_flag("--verbose,-v", verbose,
                   "Keep the library's info-level log (default: warnings and errors only)");
}

gpufeed::loader_options to_loader_options(common_options const& options) {
  gpufeed::loader_options loader;
  loader.batch_size = options.batch_size;
  loader.workers = options.workers;
  loader.prefetch_depth = options.prefetch_depth;
  loader.shuffle = false;
  loader.seed = 0;
  loader.rank = 0U;
  loader.world_size = 1U;
  return loader;
}

std::vector<std::string> split(std::string const& text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    auto const end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

namespace {

// A value as CLI11 holds it (text) as JSON: a boolean, an integer, a number, else the text.
json scalar_of(std::string const& text) {
  if (text == "true" || text == "false") return text == "true";
  auto const* const end = text.data() + text.size();
  std::int64_t integer = 0;
  if (auto const [at, error] = std::from_chars(text.data(), end, integer);
      !text.empty() && error == std::errc{} && at == end) {
    return integer;
  }
  double number = 0;
  if (auto const [at, error] = std::from_chars(text.data(), end, number);
      !text.empty() && error == std::errc{} && at == end) {
    return number;
  }
  return text;
}

}  // namespace

json config_of(CLI::App const& command) {
  json config = json::object();
  for (CLI::Option const* option : command.get_options()) {
    auto name = option->get_name();
    if (name == "--help") continue;
    name = name.substr(name.find_first_not_of('-'));
    std::replace(name.begin(), name.end(), '-', '_');
    if (option->get_expected_max() == 0) {  // a flag
      config[name] = option->count() > 0;
      continue;
    }
    auto texts = option->results();
    if (texts.empty()) {  // not given: the default, "[1,2,4]" for a list
      auto text = option->get_default_str();
      bool const list = text.starts_with('[') && text.ends_with(']');
      if (list) text = text.substr(1, text.size() - 2);
      texts = list ? split(text, ',') : std::vector<std::string>{text};
    }
    if (option->get_expected_max() > 1) {
      config[name] = json::array();
      for (auto const& text : texts) config[name].push_back(scalar_of(text));
    } else {
      config[name] = scalar_of(texts.empty() ? std::string{} : texts.back());
    }
  }
  return config;
}

void apply_log_level(bool verbose) {
  // --verbose leaves the level the library chose (GPUFEED_LOG_LEVEL, else info).
  if (!verbose) gpufeed::set_log_level("warn");
}

unsigned default_workers() {
  return gpufeed::observe::usable_cpus();
}

}  // namespace gpufeed::bench
