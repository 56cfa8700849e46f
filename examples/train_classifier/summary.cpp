#include "summary.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace train_classifier {
namespace {

run_result const* find(std::vector<run_result> const& runs, std::string const& feed) {
  for (auto const& run : runs) {
    if (run.feed == feed) return &run;
  }
  return nullptr;
}

[[gnu::format(printf, 1, 2)]] std::string format(char const* pattern, ...) {
  std::array<char, 1024> text{};
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(text.data(), text.size(), pattern, args);
  va_end(args);
  return text.data();
}

// A JSON string (the values written here need no escapes beyond these).
std::string quoted(std::string const& text) {
  std::string out = "\"";
  for (char const c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string number(double value) {
  if (!std::isfinite(value)) return "null";
  std::ostringstream out;
  out.precision(6);
  out << value;
  return out.str();
}

// Milliseconds per sample of each stage.
struct per_sample {
  double decode = 0;
  double augment = 0;
  double convert = 0;
  double stack = 0;
  [[nodiscard]] double total() const { return decode + augment + convert + stack; }
};

per_sample ms_per_sample(pipeline_stages const& s) {
  double const n = s.samples > 0 ? static_cast<double>(s.samples) : 1.0;
  return {1e3 * s.decode_s / n, 1e3 * s.augment_s / n, 1e3 * s.convert_s / n, 1e3 * s.stack_s / n};
}

// libtorch's sentence speaks of its own pieces, not of gpufeed's dataset::read.
std::string in_terms_of(std::string sentence, std::string const& feed) {
  if (feed != "libtorch") return sentence;
  std::string const from = "dataset::read";
  for (auto at = sentence.find(from); at != std::string::npos; at = sentence.find(from, at)) {
    sentence.replace(at, from.size(), "get() and Stack");
  }
  return sentence;
}

}  // namespace

std::optional<double> throughput_ratio(std::vector<run_result> const& runs) {
  auto const* ours = find(runs, "gpufeed");
  auto const* theirs = find(runs, "libtorch");
  if (ours == nullptr || theirs == nullptr || theirs->samples_per_s() <= 0) return std::nullopt;
  return ours->samples_per_s() / theirs->samples_per_s();
}

std::optional<std::string> explain_difference(std::vector<run_result> const& runs) {
  auto const* ours = find(runs, "gpufeed");
  auto const* theirs = find(runs, "libtorch");
  if (ours == nullptr || theirs == nullptr || ours->stages.samples == 0 ||
      theirs->stages.samples == 0) {
    return std::nullopt;
  }
  per_sample const g = ms_per_sample(ours->stages);
  per_sample const l = ms_per_sample(theirs->stages);
  double const saved = l.total() - g.total();
  std::string const costs = format(
      "Per sample, libtorch's input pipeline took %.2f ms of CPU (decode %.2f, augment %.2f, "
      "float conversion %.2f, stack %.2f) and gpufeed's %.2f ms (decode %.2f, of %.0f%% of the "
      "pixels: only the crop, at reduced size where the output allows; augment %.2f; float "
      "conversion %.2f, on the training side; no stack: samples are written into the batch)",
      l.total(), l.decode, l.augment, l.convert, l.stack, g.total(), g.decode,
      100 * ours->stages.decoded_share, g.augment, g.convert);
  if (saved <= 0) {
    return costs +
           format(": gpufeed's pipeline was not cheaper (%.2f ms more per sample).", -saved);
  }
  std::array<std::pair<double, char const*>, 4> parts{{{l.decode - g.decode, "decoding"},
                                                       {l.augment - g.augment, "augmentation"},
                                                       {l.convert - g.convert, "float conversion"},
                                                       {l.stack - g.stack, "stacking"}}};
  std::sort(parts.begin(), parts.end(),
            [](auto const& a, auto const& b) { return a.first > b.first; });
  std::string shares;
  for (auto const& [ms, what] : parts) {
    if (!shares.empty()) shares += ", ";
    shares += format("%s %.0f%%", what, 100 * ms / saved);
  }
  return costs + format(": %.1fx less CPU per sample, and of the %.2f ms difference: %s.",
                        l.total() / g.total(), saved, shares.c_str());
}

void print_summary(std::vector<run_result> const& runs, double total_seconds) {
  std::cout << "\nsummary\n";
  std::cout << format("  %-9s %6s %10s %10s %10s %14s %10s %13s %9s\n", "feed", "epochs",
                      "samples/s", "data wait", "CPU cores", "CPU ms/sample", "train acc",
                      "held-out acc", "train s");
  for (auto const& run : runs) {
    std::cout << format("  %-9s %6zu %10.0f %9.1f%% %10.2f %14.2f %9.1f%% %12.1f%% %9.1f\n",
                        run.feed.c_str(), run.epochs, run.samples_per_s(), 100 * run.wait_share(),
                        run.cpu_cores(), run.cpu_ms_per_sample(), 100 * run.train_accuracy,
                        100 * run.held_out_accuracy, run.train_seconds);
  }
  std::cout << "\ninput pipeline, CPU ms per sample (all worker threads; gpufeed's float "
               "conversion on the training thread)\n";
  std::cout << format("  %-9s %8s %8s %8s %8s %8s %9s\n", "feed", "decode", "augment", "convert",
                      "stack", "total", "decoded");
  for (auto const& run : runs) {
    per_sample const p = ms_per_sample(run.stages);
    std::cout << format("  %-9s %8.3f %8.3f %8.3f %8.3f %8.3f %8.0f%%\n", run.feed.c_str(),
                        p.decode, p.augment, p.convert, p.stack, p.total(),
                        100 * run.stages.decoded_share);
  }
  std::cout << '\n';
  for (auto const& run : runs) {
    std::cout << "[" << run.feed << "] " << gpufeed::to_string(run.diagnosis.kind) << ": "
              << in_terms_of(run.diagnosis.sentence, run.feed) << '\n';
  }
  if (auto const ratio = throughput_ratio(runs)) {
    std::cout << format("\ngpufeed / libtorch: %.2fx samples/s (data wait %.1f%% vs %.1f%%)\n",
                        *ratio, 100 * find(runs, "gpufeed")->wait_share(),
                        100 * find(runs, "libtorch")->wait_share());
  }
  if (auto const why = explain_difference(runs)) std::cout << *why << '\n';
  std::cout << format("wall time %.1f s\n", total_seconds) << std::flush;
}

void write_json(std::filesystem::path const& path, run_settings const& s,
                std::vector<run_result> const& runs, double total_seconds) {
  std::ofstream out{path};
  if (!out) throw std::runtime_error{"cannot write " + path.string()};
  out << "{\n  \"example\": \"train_classifier\",\n  \"command_line\": [";
  for (std::size_t i = 0; i < s.command_line.size(); ++i) {
    out << (i == 0 ? "" : ", ") << quoted(s.command_line[i]);
  }
  out << "],\n  \"commit\": " << quoted(s.commit) << ",\n  \"date\": " << quoted(s.date)
      << ",\n  \"load_average\": "
      << (s.load_average >= 0 ? number(s.load_average) : std::string{"null"}) << ",\n"
      << "  \"settings\": {\"train_images\": " << s.train_images
      << ", \"held_out_images\": " << s.held_out_images << ", \"min_side\": " << s.min_side
      << ", \"max_side\": " << s.max_side << ", \"dataset_bytes\": " << s.dataset_bytes
      << ", \"generation_seconds\": " << number(s.generation_seconds)
      << ", \"image_size\": " << s.image_size << ", \"batch_size\": " << s.batch_size
      << ", \"accumulation_steps\": " << s.accumulation_steps << ", \"workers\": " << s.workers
      << ", \"epochs\": " << s.epochs << ", \"lr\": " << number(s.lr) << ", \"seed\": " << s.seed
      << ", \"device\": " << quoted(s.device) << ", \"torch_threads\": " << s.torch_threads
      << ", \"cpus\": " << s.cpus << ", \"dataset\": " << quoted(s.dataset) << "},\n"
      << "  \"runs\": [";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    auto const& r = runs[i];
    per_sample const p = ms_per_sample(r.stages);
    out << (i == 0 ? "\n" : ",\n") << "    {\"feed\": " << quoted(r.feed)
        << ", \"epochs\": " << r.epochs << ", \"samples\": " << r.samples
        << ", \"batches\": " << r.batches << ", \"optimizer_steps\": " << r.steps
        << ", \"train_seconds\": " << number(r.train_seconds)
        << ", \"samples_per_s\": " << number(r.samples_per_s())
        << ", \"data_wait_seconds\": " << number(r.wait_seconds)
        << ", \"data_wait_share\": " << number(r.wait_share())
        << ", \"cpu_seconds\": " << number(r.cpu_seconds)
        << ", \"cpu_cores\": " << number(r.cpu_cores())
        << ", \"cpu_ms_per_sample\": " << number(r.cpu_ms_per_sample())
        << ", \"final_loss\": " << number(r.final_loss)
        << ", \"train_accuracy\": " << number(r.train_accuracy)
        << ", \"held_out_accuracy\": " << number(r.held_out_accuracy)
        << ", \"held_out_samples\": " << r.held_out_samples
        << ",\n     \"stages_ms_per_sample\": {\"decode\": " << number(p.decode)
        << ", \"augment\": " << number(p.augment) << ", \"convert\": " << number(p.convert)
        << ", \"stack\": " << number(p.stack) << ", \"total\": " << number(p.total())
        << ", \"decoded_share\": " << number(r.stages.decoded_share) << "}"
        << ",\n     \"diagnosis\": {\"kind\": " << quoted(gpufeed::to_string(r.diagnosis.kind))
        << ", \"sentence\": " << quoted(in_terms_of(r.diagnosis.sentence, r.feed)) << "}"
        << ",\n     \"epochs_measured\": [";
    for (std::size_t e = 0; e < r.epoch_measures.size(); ++e) {
      auto const& m = r.epoch_measures[e];
      out << (e == 0 ? "" : ", ") << "{\"wall_s\": " << number(m.wall_s)
          << ", \"wait_s\": " << number(m.wait_s)
          << ", \"first_batch_s\": " << number(m.first_batch_s)
          << ", \"worker_busy_s\": " << number(m.busy_s) << "}";
    }
    out << "],\n     \"pace\": [";
    for (std::size_t k = 0; k < r.pace.size(); ++k) {
      auto const& q = r.pace[k];
      out << (k == 0 ? "" : ", ") << "[" << number(q.t_s) << ", " << number(q.samples_per_s) << ", "
          << number(q.wait_share) << ", "
          << (q.gpu_percent ? number(*q.gpu_percent) : std::string{"null"}) << "]";
    }
    out << "]}";
  }
  auto const ratio = throughput_ratio(runs);
  auto const why = explain_difference(runs);
  out << "\n  ],\n  \"pace_columns\": [\"t_s\", \"samples_per_s\", \"data_wait_share\", "
         "\"gpu_percent\"],\n  \"samples_per_s_ratio\": "
      << (ratio ? number(*ratio) : "null")
      << ",\n  \"difference\": " << (why ? quoted(*why) : std::string{"null"})
      << ",\n  \"wall_seconds\": " << number(total_seconds) << "\n}\n";
  if (!out) throw std::runtime_error{"cannot write " + path.string()};
}

}  // namespace train_classifier
