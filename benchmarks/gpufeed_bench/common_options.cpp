#include "common_options.hpp"

#include <CLI/CLI.hpp>

#include "gpufeed/log.hpp"
#include "machine_info.hpp"

namespace gpufeed::bench {

void add_common_options(CLI::App& command, common_options& options) {
  command
      .add_option("--batch-size", options.batch_size,
                  "Samples per batch (loader_options::batch_size)")
      ->type_name("N")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command
      .add_option("--workers", options.workers,
                  "Loader worker threads (loader_options::workers; default: the CPUs this "
                  "process may use)")
      ->type_name("N")
      ->check(CLI::Range(1U, 1024U))
      ->capture_default_str();
  command
      .add_option("--prefetch-depth", options.prefetch_depth,
                  "Slots in the loader's ring: batches prepared ahead, leases included "
                  "(loader_options::prefetch_depth)")
      ->type_name("N")
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}))
      ->capture_default_str();
  command.add_option("--batches", options.batches, "Timed batches per run (after the warm-up)")
      ->type_name("N")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command
      .add_option("--json", options.json_path,
                  "Also write the report as JSON to FILE (schema: docs/benchmarks/schema.json; "
                  "default: none)")
      ->type_name("FILE");
  command.add_flag("--verbose,-v", options.verbose,
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

json to_json(common_options const& options) {
  return {{"batch_size", options.batch_size},
          {"workers", options.workers},
          {"prefetch_depth", options.prefetch_depth},
          {"batches", options.batches},
          {"json", options.json_path},
          {"verbose", options.verbose}};
}

void apply_log_level(common_options const& options) {
  apply_log_level(options.verbose);
}

void apply_log_level(bool verbose) {
  // --verbose leaves the level the library chose (GPUFEED_LOG_LEVEL, else info).
  if (!verbose) gpufeed::set_log_level("warn");
}

unsigned default_workers() {
  unsigned const cpus = detect_machine().cpus;
  return cpus > 0 ? cpus : 1U;
}

}  // namespace gpufeed::bench
