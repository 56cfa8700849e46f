#include "compare.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>

#include "compare_dataset.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/observe/process.hpp"
#include "loader_pass.hpp"
#include "paired.hpp"
#include "peer_python.hpp"
#include "peer_run.hpp"
#include "summary_stats.hpp"
#include "table.hpp"

#if GPUFEED_BENCH_WITH_TORCH
#include "torch_peer.hpp"
#endif

namespace gpufeed::bench {
namespace {

constexpr char const* peer_names[] = {"gpufeed", "torch_cpp", "torch_python"};

gpufeed::loader_options gpufeed_options(compare_config const& config) {
  gpufeed::loader_options options = to_loader_options(config.common);
  apply_order(config.input, options);
  options.on_error =
      config.on_error == "skip" ? gpufeed::error_policy::skip : gpufeed::error_policy::raise;
  return options;
}

peer_run run_gpufeed(compare_dataset const& data, compare_config const& config) {
  gpufeed::loader source{data.data, gpufeed_options(config)};
  auto const timed = time_batches(source, config.warmup, config.common.batches);
  peer_run run;
  run.seconds = timed.seconds;
  run.batches = timed.delivered.batches;
  run.samples = timed.delivered.samples;
  run.bytes = timed.delivered.samples * data.data->spec().bytes_per_sample();
  run.skipped = timed.after.skipped - timed.before.skipped;
  run.details = {{"epoch_ends_crossed", timed.delivered.epoch_ends},
                 {"consumer_wait_fraction",
                  ratio_or_zero(timed.grew(&gpufeed::stats::consumer_wait_s), timed.seconds)},
                 {"pinned_bytes", timed.after.pinned_bytes}};
  return run;
}

// Every run of one peer, or why it did not run.
struct peer_state {
  std::string name;
  std::optional<std::string> not_run;  // the reason, when it did not (or stopped)
  std::vector<peer_run> runs;
  json versions = json::object();
};

double per_second(std::uint64_t count, double seconds) {
  return ratio_or_zero(static_cast<double>(count), seconds);
}

std::vector<double> rates(std::vector<peer_run> const& runs, std::uint64_t peer_run::*field) {
  std::vector<double> out;
  for (auto const& run : runs) out.push_back(per_second(run.*field, run.seconds));
  return out;
}

}  // namespace

CLI::App* add_compare_command(CLI::App& app, compare_config& config) {
  CLI::App* command = add_command(
      app,
      {.name = "compare",
       .description =
           "gpufeed next to libtorch's torch::data::DataLoader (torch_cpp) and PyTorch's "
           "torch.utils.data.DataLoader (torch_python) on the same data, batch size and workers",
       .footer =
           "Each repeat runs gpufeed, then torch_cpp, then torch_python, each a fresh loader: "
           "--warmup untimed batches, then --batches timed ones, crossing epochs. The report gives "
           "each peer's median over the repeats, and for each torch peer ratio = gpufeed samples/s "
           "/ that peer's samples/s of the same repeat, the median over the repeats (the goals' "
           "statistic). --python-batches can shorten the Python peer's runs. synthetic: "
           "gpufeed::synthetic (image uint8 + label int64); libtorch's get() calls the same read "
           "into fresh tensors; the Python peer makes as many pseudo-random bytes with numpy."},
      config.common);
  add_dataset_options(*command, config.input, "this is gpufeed's (the torch peers always shuffle)");
  add_choice(*command, "--on-error", config.on_error,
             "raise or skip a failing sample (gpufeed: error_policy; torch_python: a collate that "
             "drops it; libtorch's loader cannot skip)",
             "POLICY", {"raise", "skip"});
  add_choice(*command, "--peers", config.peers,
             "Loaders to run, comma-separated: gpufeed, torch_cpp (libtorch's C++ loader; needs a "
             "libtorch build), torch_python (PyTorch's, in --python)",
             "PEER,...", {"gpufeed", "torch_cpp", "torch_python"});
  add_repeat_options(*command, config.repeats,
                     "Rounds, each one run of every peer back to back; the report gives medians "
                     "and the median of the per-round ratios",
                     config.warmup, "Untimed batches before each timed run (every peer, each run)");
  add_value(*command, "--torch-cpp-batches", config.torch_cpp_batches,
            "Timed batches of the torch_cpp peer (0: --batches)", "N");
  add_value(*command, "--python-batches", config.python_batches,
            "Timed batches of the torch_python peer, which is often 10-100x slower (0: --batches)",
            "N");
  add_value(*command, "--python", config.python,
            "The interpreter of the torch_python peer; it needs torch (and h5py / torchvision for "
            "those datasets)",
            "PATH");
  return command;
}

report run_compare(compare_config const& config, std::ostream& progress) {
  auto const& common = config.common;
  auto const& input = config.input;
  auto const choice = parse_dataset(input.dataset);
  auto const data = make_compare_dataset(choice, input);
  auto const spec = data.data->spec();

  std::vector<peer_state> peers;
  for (auto const* name : peer_names) {
    if (std::find(config.peers.begin(), config.peers.end(), name) != config.peers.end()) {
      peers.push_back({name, std::nullopt, {}, json::object()});
    }
  }
  if (peers.empty()) throw std::invalid_argument{"--peers names no loader"};
  bool const python_peer = std::any_of(peers.begin(), peers.end(),
                                       [](auto const& p) { return p.name == "torch_python"; });
  if (input.wait_us > 0 && python_peer) {
    // torch_peer.py has no sleep in its reads: the comparison would not be like for like.
    throw std::invalid_argument{
        "--wait-us is not passed to the torch_python peer; compare with --peers "
        "gpufeed,torch_cpp (which read the same dataset object), or use sweep"};
  }

  python_peer_config python;
  python.python = config.python;
  python.script = find_python_script();
  python.dataset = input.dataset;
  python.batch_size = common.batch_size;
  python.workers = common.workers;
  python.warmup = config.warmup;
  python.batches = config.python_batches > 0 ? config.python_batches : common.batches;
  python.seed = input.seed;
  python.on_error = config.on_error;
  python.samples = input.samples;
  python.shape = synthetic_image_shape(input.sample_bytes);
  python.cpu_cost_us = input.cpu_cost_us;
  python.image_size = input.image_size;

  for (auto& peer : peers) {
    if (peer.name == "torch_cpp") {
#if GPUFEED_BENCH_WITH_TORCH
      peer.versions = {{"torch", torch_cpp_version()}};
      if (spec.size() > 2) {
        peer.not_run = "the dataset has " + std::to_string(spec.size()) +
                       " fields; torch::data::Example<> holds two (name two with hdf5:PATH:a,b)";
      }
#else
      peer.not_run = "gpufeed-bench was built without libtorch (CMake found no Torch)";
#endif
    } else if (peer.name == "torch_python") {
      json versions;
      peer.not_run = python_peer_unavailable(python, versions);
      if (!peer.not_run) peer.versions = versions;
    }
    if (peer.not_run) progress << "compare: " << peer.name << " not run: " << *peer.not_run << '\n';
  }

  progress << "compare: " << input.dataset << " (" << spec.to_string() << ", " << data.data->size()
           << " samples), batch " << common.batch_size << ", " << common.workers
           << " workers, gpufeed order " << input.order << ", " << config.repeats
           << " interleaved repeats of " << common.batches << " batches\n";

  for (std::size_t r = 0; r < config.repeats; ++r) {
    for (auto& peer : peers) {
      if (peer.not_run) continue;
      peer_run run;
      if (peer.name == "gpufeed") {
        run = run_gpufeed(data, config);
      } else {
        try {
          if (peer.name == "torch_cpp") {
#if GPUFEED_BENCH_WITH_TORCH
            torch_cpp_config torch_config;
            torch_config.data = data.torch_cpp_data;
            torch_config.image_to_float = data.image_to_float;
            torch_config.columns = data.columns;
            torch_config.batch_size = common.batch_size;
            torch_config.workers = common.workers;
            torch_config.warmup = config.warmup;
            torch_config.batches =
                config.torch_cpp_batches > 0 ? config.torch_cpp_batches : common.batches;
            run = run_torch_cpp(torch_config);
#endif
          } else {
            run = run_python_peer(python);
          }
        } catch (std::exception const& e) {
          peer.not_run = std::string{"failed in repeat "} + std::to_string(r + 1) + ": " + e.what();
          progress << "  " << peer.name << ": " << *peer.not_run << '\n';
          continue;
        }
      }
      progress << "  repeat " << r + 1 << '/' << config.repeats << ": " << peer.name << ' '
               << format_rate(per_second(run.samples, run.seconds)) << " samples (" << run.batches
               << " batches in " << format_fixed(run.seconds, 3) << " s"
               << (run.skipped > 0 ? ", " + std::to_string(run.skipped) + " skipped" : "") << ")\n";
      peer.runs.push_back(std::move(run));
    }
  }

  report rep;
  // What the run derived from its flags: the chunk window in effect (0 unless chunk-aware), and
  // each peer's run length.
  rep.config = {{"chunk_window", effective_chunk_window(input)},
                {"dataset_info", data.description},
                {"python_batches", python.batches}};
  rep.config["torch_cpp_batches"] =
      config.torch_cpp_batches > 0 ? config.torch_cpp_batches : common.batches;

  // Each torch peer against gpufeed's run of the same repeat.
  auto const gpufeed_peer =
      std::find_if(peers.begin(), peers.end(), [](auto const& p) { return p.name == "gpufeed"; });
  std::vector<double> const gpufeed_sps = gpufeed_peer == peers.end()
                                              ? std::vector<double>{}
                                              : rates(gpufeed_peer->runs, &peer_run::samples);
  text_table ratios{{"gpufeed / peer", "median of pairs", "ratio of medians", "per repeat"}};
  for (auto const& peer : peers) {
    bench_result result;
    result.loader = peer.name;
    result.details = {{"versions", peer.versions}};
    if (peer.not_run) result.details["not_run"] = *peer.not_run;
    if (peer.name == "torch_cpp" && config.on_error == "skip") {
      result.details["on_error"] = "raise: libtorch's loader has no way to skip a sample";
    }
    if (!peer.runs.empty()) {
      auto const sps = rates(peer.runs, &peer_run::samples);
      result.samples_per_s = median(sps);
      result.batches_per_s = median(rates(peer.runs, &peer_run::batches));
      result.bytes_per_s = median(rates(peer.runs, &peer_run::bytes));
      std::uint64_t skipped = 0;
      json runs = json::array();
      for (auto const& run : peer.runs) {
        skipped += run.skipped;
        runs.push_back(run.details);
      }
      result.skipped = skipped;
      result.details["samples_per_s_runs"] = sps;
      result.details["run_details"] = runs;
      if (peer.name == "gpufeed") {
        result.peak_rss_bytes = gpufeed::observe::peak_rss_bytes();
        result.pinned_bytes = peer.runs.back().details.value("pinned_bytes", std::uint64_t{0});
      } else if (!gpufeed_sps.empty()) {
        // A peer that failed in a repeat has fewer runs: the pairs are the repeats both ran.
        paired_rates const pairs{sps, gpufeed_sps};
        set_paired_ratio(result, pairs);
        result.details["ratio_meaning"] =
            "median over the repeats of gpufeed samples_per_s / this loader's, same repeat";
        std::string per_repeat;
        for (auto const ratio : pairs.ratios()) {
          per_repeat += (per_repeat.empty() ? "" : ", ") + format_fixed(ratio, 2);
        }
        ratios.add_row({"gpufeed / " + peer.name, format_fixed(pairs.ratio(), 2) + "x",
                        format_fixed(pairs.ratio_of_medians(), 2) + "x", per_repeat});
      }
    }
    rep.results.push_back(std::move(result));
  }
  progress << '\n';
  ratios.print(progress);

  auto const add_goal = [&](std::string const& peer, double target) {
    for (auto const& result : rep.results) {
      if (result.loader == peer && result.ratio) {
        rep.goals.push_back(
            paired_goal("gpufeed/" + peer + " samples_per_s", target, *result.ratio));
      }
    }
  };
  switch (choice.kind) {
    case dataset_kind::synthetic:
      break;
    case dataset_kind::memory:
      add_goal("torch_cpp", 5.0);  // an in-memory dataset
      break;
    case dataset_kind::hdf5:
      add_goal("torch_python", data.chunked ? 20.0 : 10.0);
      break;
    case dataset_kind::images:
      add_goal("torch_python", 2.0);
      add_goal("torch_cpp", 3.0);
      break;
  }
  return rep;
}

}  // namespace gpufeed::bench
