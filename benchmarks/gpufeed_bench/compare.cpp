#include "compare.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>

#include "bench_clock.hpp"
#include "compare_dataset.hpp"
#include "gpufeed/loader.hpp"
#include "loader_pass.hpp"
#include "peer_python.hpp"
#include "peer_run.hpp"
#include "process_memory.hpp"
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
  consume(source, config.warmup);
  auto const before = source.snapshot();
  auto const start = bench_clock::now();
  auto const delivered = consume(source, config.common.batches);
  peer_run run;
  run.seconds = seconds_between(start, bench_clock::now());
  auto const after = source.snapshot();
  run.batches = delivered.batches;
  run.samples = delivered.samples;
  run.bytes = delivered.samples * data.data->spec().bytes_per_sample();
  run.skipped = after.skipped - before.skipped;
  run.details = {
      {"epoch_ends_crossed", delivered.epoch_ends},
      {"consumer_wait_fraction",
       run.seconds > 0 ? (after.consumer_wait_s - before.consumer_wait_s) / run.seconds : 0.0},
      {"pinned_bytes", after.pinned_bytes}};
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
  return seconds > 0 ? static_cast<double>(count) / seconds : 0.0;
}

std::vector<double> rates(std::vector<peer_run> const& runs, std::uint64_t peer_run::*field) {
  std::vector<double> out;
  for (auto const& run : runs) out.push_back(per_second(run.*field, run.seconds));
  return out;
}

}  // namespace

compare_config default_compare_config() {
  compare_config config;
  config.common.batch_size = 64;
  config.common.workers = default_workers();
  config.common.prefetch_depth = 4;
  config.common.batches = 2000;
  return config;
}

CLI::App* add_compare_command(CLI::App& app, compare_config& config) {
  CLI::App* command = app.add_subcommand(
      "compare",
      "gpufeed next to libtorch's torch::data::DataLoader (torch_cpp) and PyTorch's "
      "torch.utils.data.DataLoader (torch_python) on the same data, batch size and workers");
  add_common_options(*command, config.common);
  add_dataset_options(*command, config.input, "this is gpufeed's (the torch peers always shuffle)");
  command
      ->add_option("--on-error", config.on_error,
                   "raise or skip a failing sample (gpufeed: error_policy; torch_python: a "
                   "collate that drops it; libtorch's loader cannot skip)")
      ->type_name("POLICY")
      ->check(CLI::IsMember({"raise", "skip"}))
      ->capture_default_str();
  command
      ->add_option("--peers", config.peers,
                   "Loaders to run, comma-separated: gpufeed, torch_cpp (libtorch's C++ loader; "
                   "needs a libtorch build), torch_python (PyTorch's, in --python)")
      ->type_name("PEER,...")
      ->delimiter(',')
      ->check(CLI::IsMember({"gpufeed", "torch_cpp", "torch_python"}))
      ->capture_default_str();
  command
      ->add_option("--repeats", config.repeats,
                   "Interleaved rounds, each one run of every peer; the report gives medians")
      ->type_name("N")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000}))
      ->capture_default_str();
  command
      ->add_option("--warmup", config.warmup,
                   "Untimed batches before each timed run (every peer, each run)")
      ->type_name("N")
      ->capture_default_str();
  command
      ->add_option("--torch-cpp-batches", config.torch_cpp_batches,
                   "Timed batches of the torch_cpp peer (0: --batches)")
      ->type_name("N")
      ->capture_default_str();
  command
      ->add_option("--python-batches", config.python_batches,
                   "Timed batches of the torch_python peer, which is often 10-100x slower (0: "
                   "--batches)")
      ->type_name("N")
      ->capture_default_str();
  command
      ->add_option("--python", config.python,
                   "The interpreter of the torch_python peer; it needs torch (and h5py / "
                   "torchvision for those datasets)")
      ->type_name("PATH")
      ->capture_default_str();
  command->footer(
      "Each repeat runs gpufeed, then torch_cpp, then torch_python, each a fresh loader: "
      "--warmup untimed batches, then --batches timed ones, crossing epochs. The report gives "
      "each peer's median over the repeats, and for each torch peer ratio = gpufeed samples/s / "
      "that peer's samples/s (medians). --python-batches can shorten the Python peer's runs. "
      "synthetic: gpufeed::synthetic (image uint8 + label "
      "int64); libtorch's get() calls the same read into fresh tensors; the Python peer makes "
      "as many pseudo-random bytes with numpy.");
  return command;
}

report run_compare(compare_config const& config, std::ostream& progress) {
  apply_log_level(config.common);
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

  // Medians, and each torch peer against gpufeed.
  std::map<std::string, double> median_sps;
  for (auto const& peer : peers) {
    if (!peer.runs.empty()) median_sps[peer.name] = median(rates(peer.runs, &peer_run::samples));
  }
  auto const gpufeed_sps = median_sps.find("gpufeed");

  report rep;
  rep.command = "compare";
  rep.config = to_json(common);
  add_dataset_config(rep.config, input);
  rep.config["dataset_info"] = data.description;
  rep.config["on_error"] = config.on_error;
  rep.config["peers"] = config.peers;
  rep.config["repeats"] = config.repeats;
  rep.config["warmup"] = config.warmup;
  rep.config["python_batches"] = python.batches;
  rep.config["torch_cpp_batches"] =
      config.torch_cpp_batches > 0 ? config.torch_cpp_batches : common.batches;
  rep.config["python"] = config.python;

  text_table ratios{{"gpufeed / peer", "ratio of medians", "median of pairs", "per repeat"}};
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
        result.peak_rss_bytes = peak_rss_bytes();
        result.pinned_bytes = peer.runs.back().details.value("pinned_bytes", std::uint64_t{0});
      } else if (gpufeed_sps != median_sps.end() && *result.samples_per_s > 0) {
        result.ratio = gpufeed_sps->second / *result.samples_per_s;
        // Pairwise ratios: gpufeed's run r against this peer's run r.
        auto const& gpufeed_runs = std::find_if(peers.begin(), peers.end(), [](auto const& p) {
                                     return p.name == "gpufeed";
                                   })->runs;
        auto const gsps = rates(gpufeed_runs, &peer_run::samples);
        std::vector<double> pairs;
        std::string per_repeat;
        for (std::size_t i = 0; i < std::min(gsps.size(), sps.size()); ++i) {
          pairs.push_back(sps[i] > 0 ? gsps[i] / sps[i] : 0.0);
          if (!per_repeat.empty()) per_repeat.append(", ");
          per_repeat.append(format_fixed(pairs.back(), 2));
        }
        result.details["ratio_runs"] = pairs;
        result.details["ratio_median_of_pairs"] = median(pairs);
        result.details["ratio_meaning"] = "gpufeed samples_per_s / this loader's samples_per_s";
        ratios.add_row({"gpufeed / " + peer.name, format_fixed(*result.ratio, 2) + "x",
                        format_fixed(median(pairs), 2) + "x", per_repeat});
      }
    }
    rep.results.push_back(std::move(result));
  }
  progress << '\n';
  ratios.print(progress);

  auto const add_goal = [&](std::string const& peer, double target) {
    for (auto const& result : rep.results) {
      if (result.loader == peer && result.ratio) {
        rep.goals.push_back({"gpufeed/" + peer + " samples_per_s", ">=", target, *result.ratio});
      }
    }
  };
  switch (choice.kind) {
    case dataset_kind::synthetic:
      break;
    case dataset_kind::memory:
      add_goal("torch_cpp", 5.0);  // issue 5: an in-memory dataset
      break;
    case dataset_kind::hdf5:
      add_goal("torch_python", data.chunked ? 20.0 : 10.0);  // issue 4
      break;
    case dataset_kind::images:
      add_goal("torch_python", 2.0);  // issue 4
      add_goal("torch_cpp", 3.0);     // issue 5
      break;
  }
  return rep;
}

}  // namespace gpufeed::bench
