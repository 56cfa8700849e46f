#include "h2d.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_device.hpp"
#include "gpufeed/cuda/device.hpp"
#include "gpufeed/cuda/stream.hpp"
#include "gpufeed/datasets/synthetic.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/observe/process.hpp"
#include "h2d_peak.hpp"
#include "loader_pass.hpp"
#include "paired.hpp"
#include "summary_stats.hpp"
#include "table.hpp"

namespace gpufeed::bench {
namespace {

constexpr double goal_ratio = 0.90;
constexpr std::size_t goal_from_mib = 4;  // below that, per-batch costs are not the copy's
constexpr std::size_t min_timed_batches = 8;

// One batch size: its bytes and how many batches make a run.
struct batch_shape {
  std::size_t mib = 0;
  std::size_t sample_bytes = 0;
  std::size_t batch_bytes = 0;  // sample_bytes x batch_size: the asked MiB, rounded down
  std::size_t timed = 0;        // batches per timed run
  std::size_t warmup = 0;       // untimed batches before it
};

batch_shape shape_for(std::size_t mib, h2d_config const& config) {
  auto const& common = config.common;
  batch_shape shape;
  shape.mib = mib;
  shape.sample_bytes = (mib << 20) / common.batch_size;
  if (shape.sample_bytes == 0) {
    throw std::invalid_argument{"--batch-mib " + std::to_string(mib) + " split into --batch-size " +
                                std::to_string(common.batch_size) +
                                " samples leaves less than a byte per sample"};
  }
  shape.batch_bytes = shape.sample_bytes * common.batch_size;
  shape.timed = std::max(min_timed_batches, (config.run_mib << 20) / shape.batch_bytes);
  shape.warmup = std::max(2 * common.prefetch_depth, (config.warmup_mib << 20) / shape.batch_bytes);
  return shape;
}

// A dataset that writes nothing: reads cost nothing, so only the loader and its copies remain.
// Sized so that no run crosses an epoch end, whose restart is not what this measures.
std::shared_ptr<gpufeed::dataset const> make_dataset(batch_shape const& shape,
                                                     h2d_config const& config) {
  auto const batches = shape.warmup + shape.timed + config.common.prefetch_depth + 1;
  auto spec = gpufeed::sample_spec{}.add("data", gpufeed::dtype::u8,
                                         {static_cast<std::int64_t>(shape.sample_bytes)});
  return std::make_shared<gpufeed::synthetic>(batches * config.common.batch_size, std::move(spec),
                                              gpufeed::synthetic_options{.write = false});
}

gpufeed::loader_options loader_options_for(h2d_config const& config,
                                           gpufeed::cuda::cuda_stream const& consumer) {
  gpufeed::loader_options options = to_loader_options(config.common);
  options.target = gpufeed::placement::cuda;
  options.device = config.device;
  options.consumer_stream = consumer.view();
  options.staging = gpufeed::staging_memory::pinned;
  return options;
}

// One batch size: its peak and loader rows, medians over the pairs of runs.
paired_rows measure_size(batch_shape const& shape, h2d_config const& config,
                         gpufeed::cuda::cuda_stream const& consumer, paired_rates& rates,
                         std::ostream& progress) {
  auto const data = make_dataset(shape, config);
  auto const options = loader_options_for(config, consumer);
  h2d_peak const peak_copier{shape.batch_bytes};
  std::vector<double> copy_bps, wait_share;
  std::size_t pinned = 0;
  auto const loader_run = [&] {
    gpufeed::loader source{data, options};
    // next() returns once a copy is queued; the bytes are delivered when the consumer stream,
    // which waits on each copy, has passed the last one.
    auto const run =
        time_batches(source, shape.warmup, shape.timed, false, [&] { consumer.synchronize(); });
    // The copies' own GPU time: tells a slow copy from gaps between copies.
    copy_bps.push_back(ratio_or_zero(
        run.grew(&gpufeed::stats::timed_copies) * static_cast<double>(shape.batch_bytes),
        run.grew(&gpufeed::stats::h2d_s)));
    wait_share.push_back(ratio_or_zero(run.grew(&gpufeed::stats::consumer_wait_s), run.seconds));
    pinned = run.after.pinned_bytes;
    return static_cast<double>(run.delivered.samples * shape.sample_bytes) / run.seconds;
  };
  auto const label = format_bytes(shape.batch_bytes);
  rates = run_pairs(
      config.repeats, goes_first::peer, [&] { return peak_copier.run(shape.warmup, shape.timed); },
      loader_run, "h2d_peak", label + " ", progress);
  auto rows = paired_results(rates, "h2d_peak " + label, "gpufeed " + label, shape.sample_bytes,
                             config.common.batch_size);
  rows.peer.details.update({{"batch_bytes", shape.batch_bytes},
                            {"copies_per_run", shape.timed},
                            {"warmup_copies", shape.warmup}});
  rows.loader.peak_rss_bytes = gpufeed::observe::peak_rss_bytes();
  rows.loader.pinned_bytes = pinned;
  rows.loader.details.update({{"batch_bytes", shape.batch_bytes},
                              {"sample_bytes", shape.sample_bytes},
                              {"batches_per_run", shape.timed},
                              {"warmup_batches", shape.warmup},
                              {"copy_bytes_per_s", median(copy_bps)},
                              {"consumer_wait_fraction", median(wait_share)}});
  return rows;
}

}  // namespace

CLI::App* add_h2d_command(CLI::App& app, h2d_config& config) {
  CLI::App* command = add_command(
      app,
      {.name = "h2d",
       .description =
           "CUDA path: the loader's host-to-device throughput next to a plain loop of pinned "
           "cudaMemcpyAsync of the same bytes, for several batch sizes (needs a CUDA device)",
       .footer =
           "For each --batch-mib, each repeat runs the peak, then the loader. The peak: one pinned "
           "buffer copied to one device buffer, back-to-back cudaMemcpyAsync on one stream, timed "
           "with CUDA events. The loader: a fresh gpufeed::loader (placement::cuda, pinned "
           "staging) over gpufeed::synthetic with write = false (reads cost nothing), delivering "
           "to a stream the bench owns; the consumer takes the timed batches after the warm-up and "
           "releases each at once; the time runs from the first timed next() to a synchronize of "
           "that stream after the last. ratio = the median over the repeats of loader bytes/s / "
           "peak bytes/s of the same repeat; goal >= 0.90 for batches of 4 MiB and more. Exits "
           "with status 1 when there is no CUDA device.",
       .batch_size = "Samples each batch is split into (sample bytes = batch bytes / N)",
       .workers = "Loader worker threads (the peak is one host thread and one stream)"},
      config.common);
  // Runs are sized in bytes, so that small and large batches are timed over similar spans.
  command->remove_option(command->get_option("--batches"));
  add_list(*command, "--batch-mib", config.batch_mib,
           "Bytes per batch in MiB, comma-separated; each is one uint8 field split into "
           "--batch-size samples",
           "MIB,...")
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}));
  add_value(*command, "--run-mib", config.run_mib,
            "MiB each timed run moves (loader and peak alike): max(8, run-mib / batch-mib) batches",
            "MIB")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
  add_value(*command, "--warmup-mib", config.warmup_mib,
            "Untimed MiB before each timed run (loader and peak alike): max(2 x prefetch-depth, "
            "warmup-mib / batch-mib) batches",
            "MIB");
  add_repeats_option(*command, config.repeats,
                     "Peak/loader pairs per batch size, run back to back; the goal is the "
                     "median of their ratios");
  add_value(*command, "--device", config.device,
            "Index of the CUDA device to measure (as cudaSetDevice)", "N")
      ->check(CLI::NonNegativeNumber);
  return command;
}

report run_h2d(h2d_config const& config, std::ostream& progress) {
  auto const device = open_cuda_device(config.device);
  gpufeed::cuda::device_guard const guard{device.index};
  gpufeed::cuda::cuda_stream const consumer;

  std::vector<batch_shape> shapes;
  for (auto const mib : config.batch_mib) shapes.push_back(shape_for(mib, config));
  progress << "h2d on " << device.name << " (" << device.pci_bus_id
           << "): " << config.common.workers << " workers, prefetch depth "
           << config.common.prefetch_depth << ", " << config.repeats
           << " interleaved repeats of about " << config.run_mib << " MiB per run\n";

  report rep;
  rep.machine.gpu = device.name;
  for (auto const& shape : shapes) {
    paired_rates rates;
    auto rows = measure_size(shape, config, consumer, rates, progress);
    if (shape.mib >= goal_from_mib) {
      rep.goals.push_back(
          paired_goal("ratio " + format_bytes(shape.batch_bytes), goal_ratio, rates));
    }
    rep.results.push_back(std::move(rows.peer));
    rep.results.push_back(std::move(rows.loader));
  }

  rep.config = {
      {"staging", "pinned"}, {"dataset", "synthetic, write = false"}, {"device", to_json(device)}};
  return rep;
}

}  // namespace gpufeed::bench
