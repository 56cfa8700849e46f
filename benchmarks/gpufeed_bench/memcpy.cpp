#include "memcpy.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpufeed/datasets/in_memory.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/observe/process.hpp"
#include "loader_pass.hpp"
#include "memcpy_peak.hpp"
#include "paired.hpp"
#include "summary_stats.hpp"
#include "table.hpp"

namespace gpufeed::bench {
namespace {

constexpr double goal_ratio = 0.70;

gpufeed::loader_options loader_options_for(memcpy_config const& config) {
  gpufeed::loader_options options = to_loader_options(config.common);
  options.shuffle = config.shuffle;
  options.seed = config.seed;
  return options;
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

CLI::App* add_memcpy_command(CLI::App& app, memcpy_config& config) {
  CLI::App* command = add_command(
      app,
      {.name = "memcpy",
       .description =
           "Loader bandwidth over an in-memory dataset (each read is one memcpy of a sample), next "
           "to this machine's multi-thread memcpy bandwidth for the same copies",
       .footer = "Each repeat runs the loader, then the memcpy peak, on the same source. The "
                 "loader: a fresh gpufeed::loader over gpufeed::in_memory; the consumer takes "
                 "--batches batches after --warmup and releases each at once. The peak: --workers "
                 "threads copy the same samples in the same order into a ring of the loader's size "
                 "(prefetch-depth x batch-size x sample-bytes), claiming runs of consecutive "
                 "samples as the loader's workers do, each slot at the page offset the loader's "
                 "slot had; no queue, no hand-off. ratio = the median over the repeats of loader "
                 "bytes/s / peak bytes/s of the same repeat; goal >= 0.70.",
       .workers = "Loader worker threads, and the thread count of the memcpy peak (default: the "
                  "CPUs this process may use)"},
      config.common);
  add_value(*command, "--sample-bytes", config.sample_bytes, "Bytes per sample (one uint8 field)",
            "BYTES")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32));
  add_value(*command, "--source-mib", config.source_mib,
            "Size of the in-memory dataset in MiB (rounded down to whole batches); keep it well "
            "above the last-level cache",
            "MIB")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  add_repeat_options(*command, config.repeats,
                     "Loader/peak pairs run back to back; the goal is the median of their ratios",
                     config.warmup,
                     "Untimed batches before each timed run (loader and peak alike)");
  command->add_flag("--shuffle", config.shuffle,
                    "Read samples in the loader's seeded random order (the peak uses the same)");
  add_value(*command, "--seed", config.seed, "Seed of the --shuffle order (ignored without it)",
            "N");
  return command;
}

report run_memcpy(memcpy_config const& config, std::ostream& progress) {
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

  // The loader first: the peak then replays its memory use (which slot, at which page offset).
  std::vector<double> read_share, slot_wait_share, stall_share, read_us, peak_us;
  std::uint64_t epoch_ends = 0;
  gpufeed::stats last;
  std::vector<std::size_t> page_offsets;
  std::vector<std::uint32_t> slot_sequence;
  json slot_page_offsets = json::array();
  json slot_uses = json::array();
  auto const loader_run = [&] {
    gpufeed::loader loader{data, loader_options_for(config)};
    auto const run = time_batches(loader, config.warmup, common.batches, /*record_slots=*/true);
    double const worker_s = run.seconds * common.workers;
    read_share.push_back(ratio_or_zero(run.grew(&gpufeed::stats::read_s), worker_s));
    slot_wait_share.push_back(ratio_or_zero(run.grew(&gpufeed::stats::slot_wait_s), worker_s));
    stall_share.push_back(ratio_or_zero(run.grew(&gpufeed::stats::consumer_wait_s), run.seconds));
    read_us.push_back(1e6 * ratio_or_zero(run.grew(&gpufeed::stats::read_s),
                                          run.grew(&gpufeed::stats::samples_read)));
    epoch_ends += run.delivered.epoch_ends;
    last = run.after;
    page_offsets.clear();
    for (auto const address : run.delivered.slots) page_offsets.push_back(address % 4096);
    slot_sequence = run.delivered.slot_sequence;
    std::vector<std::size_t> uses(run.delivered.slots.size(), 0);
    for (auto const slot : slot_sequence) ++uses[slot];
    slot_page_offsets.push_back(page_offsets);
    slot_uses.push_back(uses);
    return static_cast<double>(run.delivered.samples * config.sample_bytes) / run.seconds;
  };
  auto const peak_run = [&] {
    auto const peak = peak_copier.run({page_offsets, slot_sequence});
    peak_us.push_back(1e6 * peak.seconds * common.workers / static_cast<double>(peak.samples));
    return static_cast<double>(peak.bytes) / peak.seconds;
  };
  auto const rates = run_pairs(config.repeats, goes_first::loader, peak_run, loader_run,
                               "memcpy_peak", "", progress);

  auto rows =
      paired_results(rates, "memcpy_peak", "gpufeed", config.sample_bytes, common.batch_size);
  rows.peer.details["threads"] = common.workers;
  rows.peer.details["source_page_offset"] = reinterpret_cast<std::uintptr_t>(source.data()) % 4096;
  rows.peer.details["ring_bytes"] = peak_copier.ring_bytes();
  rows.peer.details["us_per_sample_per_thread"] = median(peak_us);
  rows.loader.peak_rss_bytes = gpufeed::observe::peak_rss_bytes();
  rows.loader.pinned_bytes = last.pinned_bytes;
  rows.loader.details.update(
      {{"worker_read_fraction", median(read_share)},
       {"worker_slot_wait_fraction", median(slot_wait_share)},
       {"consumer_stall_fraction", median(stall_share)},
       {"read_us_per_sample", median(read_us)},
       {"epoch_ends_crossed", epoch_ends},
       {"ring_host_bytes", last.host_bytes},
       {"slot_page_offsets_runs", slot_page_offsets},
       {"slot_uses_runs", slot_uses},
       {"peak_rss_note", "process-wide VmHWM, includes the in-memory source"}});

  report rep;
  rep.config = {{"source_bytes", source_bytes}, {"dataset_samples", samples}};
  rep.results = {std::move(rows.peer), std::move(rows.loader)};
  rep.goals.push_back(paired_goal("ratio", goal_ratio, rates));
  return rep;
}

}  // namespace gpufeed::bench
