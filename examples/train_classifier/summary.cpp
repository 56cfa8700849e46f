#include "summary.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace train_classifier {
namespace {

run_result const* find(std::vector<run_result> const& runs, std::string const& feed) {
  for (auto const& run : runs) {
    if (run.feed == feed) return &run;
  }
  return nullptr;
}

// A JSON string (the values written here need no escapes beyond these).
std::string quoted(std::string const& text) {
  std::string out = "\"";
  for (char const c : text) {
    if (c == '"' || c == '\\') out += '\\';
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

}  // namespace

std::optional<double> throughput_ratio(std::vector<run_result> const& runs) {
  auto const* ours = find(runs, "gpufeed");
  auto const* theirs = find(runs, "libtorch");
  if (ours == nullptr || theirs == nullptr || theirs->samples_per_s() <= 0) return std::nullopt;
  return ours->samples_per_s() / theirs->samples_per_s();
}

void print_summary(std::vector<run_result> const& runs, double total_seconds) {
  std::cout << "\nsummary\n";
  std::array<char, 200> line{};
  std::snprintf(line.data(), line.size(), "  %-9s %6s %10s %10s %14s %10s %13s %9s\n", "feed",
                "epochs", "samples/s", "data wait", "CPU ms/sample", "train acc", "held-out acc",
                "train s");
  std::cout << line.data();
  for (auto const& run : runs) {
    std::snprintf(line.data(), line.size(),
                  "  %-9s %6zu %10.0f %9.1f%% %14.2f %9.1f%% %12.1f%% %9.1f\n", run.feed.c_str(),
                  run.epochs, run.samples_per_s(), 100 * run.wait_share(), run.cpu_ms_per_sample(),
                  100 * run.train_accuracy, 100 * run.held_out_accuracy, run.train_seconds);
    std::cout << line.data();
  }
  if (auto const ratio = throughput_ratio(runs)) {
    std::snprintf(line.data(), line.size(),
                  "gpufeed / libtorch: %.2fx samples/s (data wait %.1f%% vs %.1f%%)\n", *ratio,
                  100 * find(runs, "gpufeed")->wait_share(),
                  100 * find(runs, "libtorch")->wait_share());
    std::cout << line.data();
  }
  std::snprintf(line.data(), line.size(), "wall time %.1f s\n", total_seconds);
  std::cout << line.data() << std::flush;
}

void write_json(std::filesystem::path const& path, run_settings const& s,
                std::vector<run_result> const& runs) {
  std::ofstream out{path};
  if (!out) throw std::runtime_error{"cannot write " + path.string()};
  out << "{\n  \"example\": \"train_classifier\",\n"
      << "  \"settings\": {\"train_images\": " << s.train_images
      << ", \"held_out_images\": " << s.held_out_images << ", \"image_size\": " << s.image_size
      << ", \"batch_size\": " << s.batch_size
      << ", \"accumulation_steps\": " << s.accumulation_steps << ", \"workers\": " << s.workers
      << ", \"epochs\": " << s.epochs << ", \"lr\": " << number(s.lr) << ", \"seed\": " << s.seed
      << ", \"device\": " << quoted(s.device) << ", \"torch_threads\": " << s.torch_threads
      << ", \"dataset\": " << quoted(s.dataset) << "},\n  \"runs\": [";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    auto const& r = runs[i];
    out << (i == 0 ? "\n" : ",\n") << "    {\"feed\": " << quoted(r.feed)
        << ", \"epochs\": " << r.epochs << ", \"samples\": " << r.samples
        << ", \"optimizer_steps\": " << r.steps
        << ", \"train_seconds\": " << number(r.train_seconds)
        << ", \"samples_per_s\": " << number(r.samples_per_s())
        << ", \"data_wait_seconds\": " << number(r.wait_seconds)
        << ", \"data_wait_share\": " << number(r.wait_share())
        << ", \"cpu_seconds\": " << number(r.cpu_seconds)
        << ", \"final_loss\": " << number(r.final_loss)
        << ", \"train_accuracy\": " << number(r.train_accuracy)
        << ", \"held_out_accuracy\": " << number(r.held_out_accuracy)
        << ", \"held_out_samples\": " << r.held_out_samples << "}";
  }
  auto const ratio = throughput_ratio(runs);
  out << "\n  ],\n  \"samples_per_s_ratio\": " << (ratio ? number(*ratio) : "null") << "\n}\n";
  if (!out) throw std::runtime_error{"cannot write " + path.string()};
}

}  // namespace train_classifier
