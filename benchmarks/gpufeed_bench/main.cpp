// gpufeed-bench: the bundled throughput tool. One subcommand per measurement; each prints a
// table and, with --json FILE, writes the report (schema in json_report.hpp).

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

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
  namespace bench = gpufeed::bench;
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

  bench::overhead_config overhead = bench::default_overhead_config();
  bench::memcpy_config memcpy = bench::default_memcpy_config();
  bench::compare_config compare = bench::default_compare_config();
  CLI::App* const overhead_command = bench::add_overhead_command(app, overhead);
  CLI::App* const memcpy_command = bench::add_memcpy_command(app, memcpy);
  CLI::App* const compare_command = bench::add_compare_command(app, compare);
  bench::sweep_config sweep = bench::default_sweep_config();
  CLI::App* const sweep_command = bench::add_sweep_command(app, sweep);
#if GPUFEED_BENCH_WITH_IMAGES
  bench::decode_config decode = bench::default_decode_config();
  CLI::App* const decode_command = bench::add_decode_command(app, decode);
#endif
#if GPUFEED_WITH_CUDA
  bench::h2d_config h2d = bench::default_h2d_config();
  bench::overlap_config overlap = bench::default_overlap_config();
  CLI::App* const h2d_command = bench::add_h2d_command(app, h2d);
  CLI::App* const overlap_command = bench::add_overlap_command(app, overlap);
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
    bench::report rep;
    std::string json_path;
    if (overhead_command->parsed()) {
      rep = bench::run_overhead(overhead, std::cout);
      json_path = overhead.common.json_path;
    } else if (memcpy_command->parsed()) {
      rep = bench::run_memcpy(memcpy, std::cout);
      json_path = memcpy.common.json_path;
    } else if (compare_command->parsed()) {
      rep = bench::run_compare(compare, std::cout);
      json_path = compare.common.json_path;
    } else if (sweep_command->parsed()) {
      rep = bench::run_sweep(sweep, std::cout);
      json_path = sweep.json_path;
    }
#if GPUFEED_BENCH_WITH_IMAGES
    if (decode_command->parsed()) {
      rep = bench::run_decode(decode, std::cout);
      json_path = decode.common.json_path;
    }
#endif
#if GPUFEED_WITH_CUDA
    if (h2d_command->parsed()) {
      rep = bench::run_h2d(h2d, std::cout);
      json_path = h2d.common.json_path;
    } else if (overlap_command->parsed()) {
      rep = bench::run_overlap(overlap, std::cout);
      json_path = overlap.common.json_path;
    }
#endif
    auto gpu = std::move(rep.machine.gpu);  // the device a GPU subcommand measured, if any
    rep.machine = machine;
    rep.machine.gpu = std::move(gpu);
    rep.command_line.assign(argv, argv + argc);
    bench::print_report(rep, std::cout);
    if (!json_path.empty()) {
      bench::write_json(rep, json_path);
      std::cout << "\nwrote " << json_path << '\n';
    }
  } catch (std::exception const& e) {
    std::cerr << "gpufeed-bench: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
