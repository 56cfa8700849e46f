// gpufeed-bench: the bundled throughput tool. One subcommand per measurement; each prints a
// table and, with --json FILE, writes the report (schema in json_report.hpp).

#include <CLI/CLI.hpp>
#include <algorithm>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "common_options.hpp"
#include "compare.hpp"
#if GPUFEED_BENCH_WITH_IMAGES
#include "decode.hpp"
#endif
#include "gpufeed/version.hpp"
#include "json_report.hpp"
#include "machine_info.hpp"
#include "memcpy.hpp"
#include "overhead.hpp"
#include "sweep.hpp"
#include "table.hpp"
#if GPUFEED_WITH_CUDA
#include "h2d.hpp"
#include "overlap.hpp"
#endif

namespace {

namespace bench = gpufeed::bench;

// A subcommand, with how it runs once the command line has chosen it.
struct subcommand {
  CLI::App* command;
  std::function<bench::report(std::ostream&)> run;
};

// Registers a subcommand with `add`, whose flags write into a config of its own, kept with
// `run` (the flags are parsed into it after registration, before the run).
template <class Config>
void add_subcommand(std::vector<subcommand>& commands, CLI::App& app,
                    CLI::App* (*add)(CLI::App&, Config&),
                    bench::report (*run)(Config const&, std::ostream&)) {
  auto config = std::make_shared<Config>();
  CLI::App* const command = add(app, *config);
  commands.push_back({command, [config, run](std::ostream& out) { return run(*config, out); }});
}

// --list-options: every option of the tool and of each subcommand, one per line, as
// "<command>\t<name>\t<flag|value>\t<default>", so that a test can check that --help explains
// each one (tests: bench.help.*).
void list_options(CLI::App const& app) {
  auto const list = [](std::string const& command, CLI::App const& owner) {
    for (CLI::Option const* option : owner.get_options()) {
      std::cout << command << '\t' << option->get_name() << '\t'
                << (option->get_expected_max() == 0 ? "flag" : "value") << '\t'
                << option->get_default_str() << '\n';
    }
  };
  list("gpufeed-bench", app);
  for (CLI::App const* command : app.get_subcommands([](CLI::App const*) { return true; }))
    list(command->get_name(), *command);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "gpufeed-bench: measures the gpufeed loader on this machine. Run a subcommand with --help "
      "for what it measures.",
      "gpufeed-bench"};
  app.set_version_flag("--version", gpufeed::version);
  app.require_subcommand(1);
  app.footer(
      "Host subcommands: overhead, memcpy, compare, sweep (and decode where the image datasets "
      "are built); CUDA builds add h2d and overlap. "
      "Each prints a table; --json FILE writes the report (schema: docs/benchmarks/schema.json). "
      "gpufeed-bench SUBCOMMAND --help explains every flag with its unit and default.");

  std::vector<subcommand> commands;
  add_subcommand(commands, app, bench::add_overhead_command, bench::run_overhead);
  add_subcommand(commands, app, bench::add_memcpy_command, bench::run_memcpy);
  add_subcommand(commands, app, bench::add_compare_command, bench::run_compare);
  add_subcommand(commands, app, bench::add_sweep_command, bench::run_sweep);
#if GPUFEED_BENCH_WITH_IMAGES
  add_subcommand(commands, app, bench::add_decode_command, bench::run_decode);
#endif
#if GPUFEED_WITH_CUDA
  add_subcommand(commands, app, bench::add_h2d_command, bench::run_h2d);
  add_subcommand(commands, app, bench::add_overlap_command, bench::run_overlap);
#endif
  // After every subcommand is registered; it runs while parsing, before the subcommand check.
  app.add_flag_callback(
      "--list-options",
      [&app] {
        list_options(app);
        throw CLI::Success{};
      },
      "Print every option of the tool and of each subcommand, one per line (command, name, flag "
      "or value, default), and exit; used by the tests that check --help");

  try {
    app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    return app.exit(e);
  }

  try {
    // Before the run, so that the load average is other processes' load, not this run's.
    bench::machine_info const machine = bench::detect_machine();
    auto const& [command, run] = *std::find_if(commands.begin(), commands.end(),
                                               [](auto const& c) { return c.command->parsed(); });
    // What every subcommand's run shares: the log level --verbose asks for, and its name.
    bench::apply_log_level(command->get_option("--verbose")->count() > 0);
    bench::report rep = run(std::cout);
    rep.command = command->get_name();
    // Every flag of the subcommand, then what the run derived (which wins where they meet).
    auto config = bench::config_of(*command);
    config.update(rep.config);
    rep.config = std::move(config);
    auto gpu = std::move(rep.machine.gpu);  // the device a GPU subcommand measured, if any
    rep.machine = machine;
    rep.machine.gpu = std::move(gpu);
    rep.command_line.assign(argv, argv + argc);
    bench::print_report(rep, std::cout);
    if (auto const json_path = rep.config.value("json", std::string{}); !json_path.empty()) {
      bench::write_json(rep, json_path);
      std::cout << "\nwrote " << json_path << '\n';
    }
  } catch (std::exception const& e) {
    std::cerr << "gpufeed-bench: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
