#include "h2d.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_clock.hpp"
#include "cuda_device.hpp"
#include "gpufeed/cuda/device.hpp"
#include "gpufeed/cuda/stream.hpp"
#include "gpufeed/datasets/synthetic.hpp"
#include "gpufeed/loader.hpp"
#include "h2d_peak.hpp"
#include "loader_pass.hpp"
#include "process_memory.hpp"
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

// One timed loader run, on a fresh loader (so no run inherits another's prefetched slots).
struct loader_run {
  double seconds = 0;
  consumed delivered;
  gpufeed::stats before;  // after the warm-up
  gpufeed::stats after;
};

loader_run run_loader(std::shared_ptr<gpufeed::dataset const> data,
                      gpufeed::loader_options const& options, batch_shape const& shape,
                      gpufeed::cuda::cuda_stream const& consumer) {
  gpufeed::loader source{std::move(data), options};
  consume(source, shape.warmup);
  loader_run run;
  run.before = source.snapshot();
  auto const start = bench_clock::now();
  run.delivered = consume(source, shape.timed);
  // next() returns once a copy is queued; the bytes are delivered when the consumer stream,
  // which waits on each copy, has passed the last one.
  consumer.synchronize();
  run.seconds = seconds_between(start, bench_clock::now());
  run.after = source.snapshot();
  return run;
}

// The medians of one batch size's repeats.
struct size_result {
  bench_result peak;
  bench_result loader;
};

size_result measure_size(batch_shape const& shape, h2d_config const& config,
                         gpufeed::cuda::cuda_stream const& consumer, std::ostream& progress) {
  auto const data = make_dataset(shape, config);
  auto const options = loader_options_for(config, consumer);
  h2d_peak const peak_copier{shape.batch_bytes};
  std::string const label = format_bytes(shape.batch_bytes);
  auto const batch_bytes = static_cast<double>(shape.batch_bytes);

  std::vector<double> peak_bps, loader_bps, pair_ratios, copy_bps, wait_share;
  std::size_t pinned = 0;
  for (std::size_t r = 0; r < config.repeats; ++r) {
    double const peak_rate = peak_copier.run(shape.warmup, shape.timed);
    auto const run = run_loader(data, options, shape, consumer);
    double const loader_rate =
        static_cast<double>(run.delivered.samples * shape.sample_bytes) / run.seconds;
    peak_bps.push_back(peak_rate);
    loader_bps.push_back(loader_rate);
    pair_ratios.push_back(ratio_or_zero(loader_rate, peak_rate));
    // The copies' own GPU time: tells a slow copy from gaps between copies.
    auto const timed = run.after.timed_copies - run.before.timed_copies;
    copy_bps.push_back(ratio_or_zero(static_cast<double>(timed) * batch_bytes,
                                     run.after.h2d_s - run.before.h2d_s));
    wait_share.push_back(
        ratio_or_zero(run.after.consumer_wait_s - run.before.consumer_wait_s, run.seconds));
    pinned = run.after.pinned_bytes;
    progress << "  " << label << " repeat " << r + 1 << '/' << config.repeats << ": h2d_peak "
             << format_bandwidth(peak_rate) << "  gpufeed " << format_bandwidth(loader_rate)
             << "  ratio " << format_fixed(100.0 * pair_ratios.back(), 1) << " %\n";
  }

  double const peak_median = median(peak_bps);
  double const loader_median = median(loader_bps);
  size_result out;
  out.peak.loader = "h2d_peak " + label;
  out.peak.bytes_per_s = peak_median;
  out.peak.batches_per_s = peak_median / batch_bytes;
  out.peak.samples_per_s = *out.peak.batches_per_s * static_cast<double>(config.common.batch_size);
  out.peak.memcpy_bytes_per_s = peak_median;
  out.peak.details = {{"batch_bytes", shape.batch_bytes},
                      {"copies_per_run", shape.timed},
                      {"warmup_copies", shape.warmup},
                      {"bytes_per_s_runs", peak_bps}};

  out.loader.loader = "gpufeed " + label;
  out.loader.bytes_per_s = loader_median;
  out.loader.batches_per_s = loader_median / batch_bytes;
  out.loader.samples_per_s =
      *out.loader.batches_per_s * static_cast<double>(config.common.batch_size);
  out.loader.memcpy_bytes_per_s = peak_median;
  out.loader.ratio = ratio_or_zero(loader_median, peak_median);
  out.loader.peak_rss_bytes = peak_rss_bytes();
  out.loader.pinned_bytes = pinned;
  out.loader.details = {{"batch_bytes", shape.batch_bytes},
                        {"sample_bytes", shape.sample_bytes},
                        {"batches_per_run", shape.timed},
                        {"warmup_batches", shape.warmup},
                        {"h2d_bytes_per_s", loader_median},
                        {"peak_h2d_bytes_per_s", peak_median},
                        {"bytes_per_s_runs", loader_bps},
                        {"ratio_runs", pair_ratios},
                        {"ratio_median_of_pairs", median(pair_ratios)},
                        {"copy_bytes_per_s", median(copy_bps)},
                        {"consumer_wait_fraction", median(wait_share)}};
  return out;
}

}  // namespace

h2d_config default_h2d_config() {
  h2d_config config;
  config.common.batch_size = 64;
  config.common.workers = 8;
  config.common.prefetch_depth = 4;
  return config;
}

CLI::App* add_h2d_command(CLI::App& app, h2d_config& config) {
  CLI::App* command = app.add_subcommand(
      "h2d",
      "CUDA path: the loader's host-to-device throughput next to a plain loop of pinned "
      "cudaMemcpyAsync of the same bytes, for several batch sizes (needs a CUDA device)");
  add_common_options(*command, config.common);
  // Runs are sized in bytes, so that small and large batches are timed over similar spans.
  command->remove_option(command->get_option("--batches"));
  command->get_option("--batch-size")
      ->description("Samples each batch is split into (sample bytes = batch bytes / N)");
  command->get_option("--workers")
      ->description("Loader worker threads (the peak is one host thread and one stream)");
  command
      ->add_option("--batch-mib", config.batch_mib,
                   "Bytes per batch in MiB, comma-separated; each is one uint8 field split "
                   "into --batch-size samples")
      ->type_name("MIB,...")
      ->delimiter(',')
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}))
      ->capture_default_str();
  command
      ->add_option("--run-mib", config.run_mib,
                   "MiB each timed run moves (loader and peak alike): max(8, run-mib / "
                   "batch-mib) batches")
      ->type_name("MIB")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24))
      ->capture_default_str();
  command
      ->add_option("--warmup-mib", config.warmup_mib,
                   "Untimed MiB before each timed run (loader and peak alike): max(2 x "
                   "prefetch-depth, warmup-mib / batch-mib) batches")
      ->type_name("MIB")
      ->capture_default_str();
  command
      ->add_option("--repeats", config.repeats,
                   "Interleaved peak/loader pairs per batch size; the report gives the medians")
      ->type_name("N")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000}))
      ->capture_default_str();
  command
      ->add_option("--device", config.device,
                   "Index of the CUDA device to measure (as cudaSetDevice)")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->footer(
      "For each --batch-mib, each repeat runs the peak, then the loader. The peak: one pinned "
      "buffer copied to one device buffer, back-to-back cudaMemcpyAsync on one stream, timed "
      "with CUDA events. The loader: a fresh gpufeed::loader (placement::cuda, pinned staging) "
      "over gpufeed::synthetic with write = false (reads cost nothing), delivering to a stream "
      "the bench owns; the consumer takes the timed batches after the warm-up and releases each "
      "at once; the time runs from the first timed next() to a synchronize of that stream after "
      "the last. ratio = median loader bytes/s / median peak bytes/s; goal >= 0.90 for batches "
      "of 4 MiB and more. Exits with status 1 when there is no CUDA device.");
  return command;
}

report run_h2d(h2d_config const& config, std::ostream& progress) {
  apply_log_level(config.common);
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
  rep.command = "h2d";
  rep.machine.gpu = device.name;
  for (auto const& shape : shapes) {
    auto sized = measure_size(shape, config, consumer, progress);
    if (shape.mib >= goal_from_mib) {
      rep.goals.push_back(
          {"ratio " + format_bytes(shape.batch_bytes), ">=", goal_ratio, *sized.loader.ratio});
    }
    rep.results.push_back(std::move(sized.peak));
    rep.results.push_back(std::move(sized.loader));
  }

  rep.config = to_json(config.common);
  rep.config.erase("batches");
  rep.config["batch_mib"] = config.batch_mib;
  rep.config["run_mib"] = config.run_mib;
  rep.config["warmup_mib"] = config.warmup_mib;
  rep.config["repeats"] = config.repeats;
  rep.config["staging"] = "pinned";
  rep.config["dataset"] = "synthetic, write = false";
  rep.config["device"] = to_json(device);
  return rep;
}

}  // namespace gpufeed::bench
