#include "memcpy.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_clock.hpp"
#include "gpufeed/datasets/in_memory.hpp"
#include "gpufeed/loader.hpp"
#include "loader_pass.hpp"
#include "memcpy_peak.hpp"
#include "process_memory.hpp"
#include "summary_stats.hpp"
#include "table.hpp"

namespace gpufeed::bench {
namespace {

constexpr double goal_ratio = 0.70;

// One timed loader run, on a fresh loader (so no run inherits another's prefetched slots).
struct loader_run {
  double seconds = 0;
  consumed delivered;
  gpufeed::stats before;  // after the warm-up
  gpufeed::stats after;
};

gpufeed::loader_options loader_options_for(memcpy_config const& config) {
  gpufeed::loader_options options = to_loader_options(config.common);
  options.shuffle = config.shuffle;
  options.seed = config.seed;
  return options;
}

loader_run run_loader(std::shared_ptr<gpufeed::dataset const> data, memcpy_config const& config) {
  gpufeed::loader source{std::move(data), loader_options_for(config)};
  consume(source, config.warmup);
  loader_run run;
  run.before = source.snapshot();
  auto const start = bench_clock::now();
  run.delivered = consume(source, config.common.batches, /*record_slots=*/true);
  run.seconds = seconds_between(start, bench_clock::now());
  run.after = source.snapshot();
  return run;
}

// Deterministic, non-zero content: every page is really backed, no zero-page sharing.
std::vector<std::uint64_t> make_source(std::size_t bytes) {
  std::vector<std::uint64_t> words((bytes + 7) / 8);
  std::uint64_t state = 0x9e3779b97f4a7c15ULL;
  for (auto& word : words) {
    state += 0x9e3779b97f4a7c15ULL;
    word = state ^ (state >> 29);
  }
  return words;
}

}  // namespace

memcpy_config default_memcpy_config() {
  memcpy_config config;
  config.common.batch_size = 64;
  config.common.workers = default_workers();
  config.common.prefetch_depth = 4;
  config.common.batches = 2000;
  return config;
}

CLI::App* add_memcpy_command(CLI::App& app, memcpy_config& config) {
  CLI::App* command = app.add_subcommand(
      "memcpy",
      "Loader bandwidth over an in-memory dataset (each read is one memcpy of a sample), next "
      "to this machine's multi-thread memcpy bandwidth for the same copies");
  add_common_options(*command, config.common);
  command->get_option("--workers")
      ->description(
          "Loader worker threads, and the thread count of the memcpy peak (default: the CPUs "
          "this process may use)");
  command->add_option("--sample-bytes", config.sample_bytes, "Bytes per sample (one uint8 field)")
      ->type_name("BYTES")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32))
      ->capture_default_str();
  command
      ->add_option("--source-mib", config.source_mib,
                   "Size of the in-memory dataset in MiB (rounded down to whole batches); keep it "
                   "well above the last-level cache")
      ->type_name("MIB")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))
      ->capture_default_str();
  command
      ->add_option("--repeats", config.repeats,
                   "Interleaved peak/loader pairs; the report gives the medians")
      ->type_name("N")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000}))
      ->capture_default_str();
  command
      ->add_option("--warmup", config.warmup,
                   "Untimed batches before each timed run (loader and peak alike)")
      ->type_name("N")
      ->capture_default_str();
  command->add_flag("--shuffle", config.shuffle,
                    "Read samples in the loader's seeded random order (the peak uses the same)");
  command->add_option("--seed", config.seed, "Seed of the --shuffle order (ignored without it)")
      ->type_name("N")
      ->capture_default_str();
  command->footer(
      "Each repeat runs the loader, then the memcpy peak, on the same source. The loader: a fresh "
      "gpufeed::loader over gpufeed::in_memory; the consumer takes --batches batches after "
      "--warmup and releases each at once. The peak: --workers threads copy the same samples in "
      "the same order into a ring of the loader's size (prefetch-depth x batch-size x "
      "sample-bytes), claiming runs of consecutive samples as the loader's workers do, each slot "
      "at the page offset the loader's slot had; no queue, no hand-off. ratio = median loader "
      "bytes/s / median peak bytes/s; goal >= 0.70.");
  return command;
}

report run_memcpy(memcpy_config const& config, std::ostream& progress) {
  apply_log_level(config.common);
  auto const& common = config.common;
  std::size_t const batch_bytes = common.batch_size * config.sample_bytes;
  std::size_t const batches_in_source = (config.source_mib << 20) / batch_bytes;
  if (batches_in_source == 0) {
    throw std::invalid_argument{"--source-mib " + std::to_string(config.source_mib) +
                                " holds no whole batch of " + std::to_string(batch_bytes) +
                                " bytes; raise it or lower --batch-size / --sample-bytes"};
  }
  std::size_t const samples = batches_in_source * common.batch_size;
  std::size_t const source_bytes = samples * config.sample_bytes;

  auto const words = std::make_shared<std::vector<std::uint64_t> const>(make_source(source_bytes));
  std::span<std::byte const> const source = std::as_bytes(std::span{*words}).first(source_bytes);
  auto data = std::make_shared<gpufeed::in_memory>(samples);
  data->add_bytes("data", gpufeed::dtype::u8, {static_cast<std::int64_t>(config.sample_bytes)},
                  source, words);

  memcpy_peak_config peak_config;
  peak_config.source = source;
  peak_config.sample_bytes = config.sample_bytes;
  peak_config.dataset_samples = samples;
  peak_config.batch_size = common.batch_size;
  peak_config.ring_slots = common.prefetch_depth;
  peak_config.threads = common.workers;
  peak_config.warmup_batches = config.warmup;
  peak_config.batches = common.batches;
  peak_config.shuffle = config.shuffle;
  peak_config.seed = config.seed;
  memcpy_peak const peak_copier{peak_config};

  progress << "memcpy: " << samples << " samples of " << config.sample_bytes << " B ("
           << format_bytes(source_bytes) << "), " << common.workers << " workers, "
           << config.repeats << " interleaved repeats of " << common.batches << " batches ("
           << format_bytes(common.batches * batch_bytes) << " each)\n";

  std::vector<double> peak_bps, loader_bps, loader_sps, loader_batch_ps, pair_ratios;
  std::vector<double> read_share, slot_wait_share, stall_share, loader_us_per_sample,
      peak_us_per_sample;
  std::uint64_t epoch_ends = 0;
  std::size_t pinned = 0, host_bytes = 0;
  json slot_page_offsets = json::array();
  json slot_uses = json::array();
  for (std::size_t r = 0; r < config.repeats; ++r) {
    // The loader first: the peak then replays its memory use (which slot, at which page offset).
    auto const run = run_loader(data, config);
    std::vector<std::size_t> page_offsets;
    for (auto const address : run.delivered.slots) page_offsets.push_back(address % 4096);
    auto const peak = peak_copier.run({page_offsets, run.delivered.slot_sequence});

    double const peak_rate = static_cast<double>(peak.bytes) / peak.seconds;
    double const loader_bytes =
        static_cast<double>(run.delivered.samples) * static_cast<double>(config.sample_bytes);
    double const loader_rate = loader_bytes / run.seconds;
    peak_bps.push_back(peak_rate);
    loader_bps.push_back(loader_rate);
    loader_sps.push_back(static_cast<double>(run.delivered.samples) / run.seconds);
    loader_batch_ps.push_back(static_cast<double>(run.delivered.batches) / run.seconds);
    pair_ratios.push_back(ratio_or_zero(loader_rate, peak_rate));

    double const worker_seconds = run.seconds * common.workers;
    double const read_s = run.after.read_s - run.before.read_s;
    auto const reads = static_cast<double>(run.after.samples_read - run.before.samples_read);
    read_share.push_back(ratio_or_zero(read_s, worker_seconds));
    slot_wait_share.push_back(
        ratio_or_zero(run.after.slot_wait_s - run.before.slot_wait_s, worker_seconds));
    stall_share.push_back(
        ratio_or_zero(run.after.consumer_wait_s - run.before.consumer_wait_s, run.seconds));
    loader_us_per_sample.push_back(1e6 * ratio_or_zero(read_s, reads));
    peak_us_per_sample.push_back(1e6 * peak.seconds * common.workers /
                                 static_cast<double>(peak.samples));
    epoch_ends += run.delivered.epoch_ends;
    pinned = run.after.pinned_bytes;
    host_bytes = run.after.host_bytes;
    slot_page_offsets.push_back(page_offsets);
    std::vector<std::size_t> uses(run.delivered.slots.size(), 0);
    for (auto const slot : run.delivered.slot_sequence) ++uses[slot];
    slot_uses.push_back(uses);

    progress << "  repeat " << r + 1 << '/' << config.repeats << ": memcpy_peak "
             << format_bandwidth(peak_rate) << "  gpufeed " << format_bandwidth(loader_rate)
             << "  ratio " << format_fixed(100.0 * pair_ratios.back(), 1) << " %\n";
  }

  double const peak_median = median(peak_bps);
  double const loader_median = median(loader_bps);

  bench_result peak_result;
  peak_result.loader = "memcpy_peak";
  peak_result.bytes_per_s = peak_median;
  peak_result.samples_per_s = peak_median / static_cast<double>(config.sample_bytes);
  peak_result.batches_per_s = *peak_result.samples_per_s / static_cast<double>(common.batch_size);
  peak_result.memcpy_bytes_per_s = peak_median;
  peak_result.details = {
      {"threads", common.workers},
      {"source_page_offset", reinterpret_cast<std::uintptr_t>(source.data()) % 4096},
      {"ring_bytes", peak_copier.ring_bytes()},
      {"bytes_per_s_runs", peak_bps},
      {"us_per_sample_per_thread", median(peak_us_per_sample)}};

  bench_result loader_result;
  loader_result.loader = "gpufeed";
  loader_result.bytes_per_s = loader_median;
  loader_result.samples_per_s = median(loader_sps);
  loader_result.batches_per_s = median(loader_batch_ps);
  loader_result.memcpy_bytes_per_s = peak_median;
  loader_result.ratio = ratio_or_zero(loader_median, peak_median);
  loader_result.peak_rss_bytes = peak_rss_bytes();
  loader_result.pinned_bytes = pinned;
  loader_result.details = {{"bytes_per_s_runs", loader_bps},
                           {"ratio_runs", pair_ratios},
                           {"ratio_median_of_pairs", median(pair_ratios)},
                           {"worker_read_fraction", median(read_share)},
                           {"worker_slot_wait_fraction", median(slot_wait_share)},
                           {"consumer_stall_fraction", median(stall_share)},
                           {"read_us_per_sample", median(loader_us_per_sample)},
                           {"epoch_ends_crossed", epoch_ends},
                           {"ring_host_bytes", host_bytes},
                           {"slot_page_offsets_runs", slot_page_offsets},
                           {"slot_uses_runs", slot_uses},
                           {"peak_rss_note", "process-wide VmHWM, includes the in-memory source"}};

  report rep;
  rep.command = "memcpy";
  rep.config = to_json(common);
  rep.config["sample_bytes"] = config.sample_bytes;
  rep.config["source_mib"] = config.source_mib;
  rep.config["source_bytes"] = source_bytes;
  rep.config["dataset_samples"] = samples;
  rep.config["repeats"] = config.repeats;
  rep.config["warmup"] = config.warmup;
  rep.config["shuffle"] = config.shuffle;
  rep.config["seed"] = config.seed;
  rep.results = {peak_result, loader_result};
  rep.goals.push_back({"ratio", ">=", goal_ratio, *loader_result.ratio});
  return rep;
}

}  // namespace gpufeed::bench
