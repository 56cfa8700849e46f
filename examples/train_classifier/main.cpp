// train_classifier: a small CNN trained on photograph-sized JPEGs with gpufeed, and the same
// training fed by libtorch's own data loader, side by side in one run (docs/torch.md).
// `scripts/demo` runs it.
//
//   train_classifier                      # both feeds, the default demo
//   train_classifier --out-dir runs/a     # also: runs/a/train_classifier.{log,svg,json}
//   train_classifier --feed gpufeed --epochs 8 --workers 4 --json run.json
//
// The first run writes the images (ten kinds of texture, 320 to 500 pixels on the long side)
// into a cache folder; later runs reuse them. Exit status: 0, or 1 on an error (a non-finite
// loss included).

#include <torch/torch.h>
#include <CLI/CLI.hpp>
#include <gpufeed/log.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "chart.hpp"
#include "gpufeed_feed.hpp"
#include "libtorch_feed.hpp"
#include "progress.hpp"
#include "summary.hpp"
#include "synthetic_images.hpp"
#include "training.hpp"

namespace {

namespace tc = train_classifier;
namespace fs = std::filesystem;

struct flags {
  std::size_t epochs = 5;
  std::size_t batch_size = 32;
  unsigned workers = 2;
  std::size_t images = 3000;
  int min_side = 320;
  int max_side = 500;
  int image_size = 64;
  std::size_t accumulation_steps = 2;
  double lr = 3e-3;
  std::string cache_dir = tc::default_cache_dir().string();
  std::string feed = "both";
  std::string device = "auto";
  std::uint64_t seed = 1;
  std::string json;
  std::string out_dir;
  std::string commit;
  bool quick = false;
  std::vector<std::string> command_line;
};

void print_error(std::exception const& e, int depth = 0) {
  std::cerr << (depth == 0 ? "train_classifier: error: " : "  because: ") << e.what() << "\n";
  try {
    std::rethrow_if_nested(e);
  } catch (std::exception const& inner) {
    print_error(inner, depth + 1);
  } catch (...) {
  }
}

// --device: auto takes the GPU where libtorch sees one; cuda is refused, with the reason, where
// this build cannot put batches on a GPU.
torch::Device resolve_device(std::string const& name) {
  bool const available = torch::cuda::is_available();
  if (name == "cpu" || (name == "auto" && !available)) return torch::Device{torch::kCPU};
  if (!available) {
    throw std::runtime_error{
        "--device cuda: libtorch sees no CUDA device (torch::cuda::is_available() is false: no "
        "GPU on this machine, no driver, or a libtorch built without CUDA, as Debian's is); run "
        "with --device cpu, or without --device"};
  }
#if !GPUFEED_TORCH_WITH_CUDA
  throw std::runtime_error{
      "--device cuda: gpufeed::torch was built without CUDA (GPUFEED_TORCH_WITH_CUDA=0), so it "
      "cannot put batches on the GPU; rebuild against a CUDA libtorch, or run with --device cpu"};
#else
  return torch::Device{torch::kCUDA, 0};
#endif
}

// The current UTC time as ISO 8601 (2026-11-24T19:20:00Z).
std::string utc_now() {
  std::time_t const now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  std::array<char, 32> text{};
  std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text.data();
}

// The 1-minute load average, or -1 where the kernel does not say.
double load_average() {
  double load = -1;
  return getloadavg(&load, 1) == 1 ? load : -1;
}

int run(flags const& f) {
  auto const start = std::chrono::steady_clock::now();
  std::string const started_utc = utc_now();
  double const load_at_start = load_average();  // before this run adds its own
  std::unique_ptr<std::ofstream> log;
  fs::path out_dir;
  if (!f.out_dir.empty()) {
    out_dir = f.out_dir;
    fs::create_directories(out_dir);
    log = std::make_unique<std::ofstream>(out_dir / "train_classifier.log");
    if (!*log)
      throw std::runtime_error{"cannot write " + (out_dir / "train_classifier.log").string()};
  }
  torch::Device const device = resolve_device(f.device);
  auto const images = tc::ensure_synthetic_images({.cache_dir = f.cache_dir,
                                                   .train_images = f.images,
                                                   .min_side = f.min_side,
                                                   .max_side = f.max_side});
  tc::progress_printer progress{device.is_cuda()};
  progress.copy_to(log.get());
  unsigned const cpus = std::max(1U, std::thread::hardware_concurrency());
  {
    std::ostringstream header;
    header << "train_classifier: " << images.train_images << " training + " << images.val_images
           << " held-out JPEGs (" << f.min_side << "-" << f.max_side << " px, "
           << images.bytes / 1'000'000 << " MB) in " << tc::class_names().size() << " classes -> "
           << f.image_size << "x" << f.image_size << " | batch " << f.batch_size << " x "
           << f.accumulation_steps << " micro-batches per step | " << f.workers
           << " workers each | " << f.epochs << " epochs | Adam lr " << f.lr << " | "
           << device.str() << " (" << torch::get_num_threads() << " torch threads, " << cpus
           << " CPUs)";
    progress.print(header.str());
  }

  tc::feed_options const train{.folder = images.train,
                               .image_size = f.image_size,
                               .batch_size = f.batch_size,
                               .workers = f.workers,
                               .accumulation_steps = f.accumulation_steps,
                               .seed = f.seed,
                               .train = true,
                               .device = device};
  auto held_out = train;
  held_out.folder = images.val;
  held_out.accumulation_steps = 1;
  held_out.train = false;
  tc::training_options const training{
      .epochs = f.epochs,
      .lr = f.lr,
      .seed = f.seed,
      .classes = static_cast<std::int64_t>(tc::class_names().size()),
      .device = device};

  tc::warm_up(training, train);
  // Both runs advance epoch by epoch, in turn, so that a drift in the machine's speed (other
  // jobs on it) touches both alike.
  std::vector<std::unique_ptr<tc::training_run>> runs;
  if (f.feed != "libtorch") {
    runs.push_back(std::make_unique<tc::training_run>("gpufeed", tc::make_gpufeed_feed, train,
                                                      held_out, training));
  }
  if (f.feed != "gpufeed") {
    runs.push_back(std::make_unique<tc::training_run>("libtorch", tc::make_libtorch_feed, train,
                                                      held_out, training));
  }
  for (std::size_t epoch = 0; epoch < f.epochs; ++epoch) {
    for (auto& run : runs) run->train_epoch(progress);
  }
  std::vector<tc::run_result> results;
  for (auto& run : runs) {
    run->evaluate();
    results.push_back(run->result());
  }
  double const total_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  {
    // The summary goes to the terminal and the log alike.
    std::ostringstream summary;
    auto* const old = std::cout.rdbuf(summary.rdbuf());
    tc::print_summary(results, total_seconds);
    std::cout.rdbuf(old);
    std::cout << summary.str() << std::flush;
    if (log) *log << summary.str() << std::flush;
  }

  tc::run_settings const settings{.train_images = images.train_images,
                                  .held_out_images = images.val_images,
                                  .min_side = f.min_side,
                                  .max_side = f.max_side,
                                  .dataset_bytes = images.bytes,
                                  .generation_seconds = images.write_seconds,
                                  .image_size = f.image_size,
                                  .batch_size = f.batch_size,
                                  .accumulation_steps = f.accumulation_steps,
                                  .workers = f.workers,
                                  .epochs = f.epochs,
                                  .lr = f.lr,
                                  .seed = f.seed,
                                  .device = device.str(),
                                  .torch_threads = torch::get_num_threads(),
                                  .cpus = cpus,
                                  .dataset = images.root.string(),
                                  .commit = f.commit,
                                  .command_line = f.command_line,
                                  .date = started_utc,
                                  .load_average = load_at_start};
  std::vector<std::string> written;
  std::string json = f.json;
  if (json.empty() && !out_dir.empty()) json = (out_dir / "train_classifier.json").string();
  if (!json.empty()) {
    tc::write_json(json, settings, results, total_seconds);
    written.push_back(json);
  }
  if (!out_dir.empty()) {
    auto const svg = out_dir / "train_classifier.svg";
    std::ostringstream caption;
    caption << images.train_images << " training JPEGs (" << f.min_side << "-" << f.max_side
            << " px) -> " << f.image_size << "x" << f.image_size << ", batch " << f.batch_size
            << ", " << f.workers << " workers each, " << cpus << " CPUs, " << device.str()
            << (f.commit.empty() ? std::string{} : ", commit " + f.commit.substr(0, 12));
    tc::write_chart(svg, results, caption.str());
    written.push_back(svg.string());
    written.push_back((out_dir / "train_classifier.log").string());
  }
  for (auto const& path : written) std::cout << "wrote " << path << "\n";
  if (!f.quick) {
    for (auto const& r : results) {
      if (r.held_out_accuracy < 0.2) {
        std::cout << "warning: the " << r.feed << " run's held-out accuracy ("
                  << 100 * r.held_out_accuracy
                  << "%) is near chance (10%); train longer (--epochs) or on more images\n";
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Trains a small CNN on photograph-sized JPEGs (10 classes of texture), fed by gpufeed and "
      "by libtorch's own data loader with the same augmentations, and compares the two: "
      "samples/s, data-wait share, CPU use, each loader's diagnosis, and where the difference "
      "comes from."};
  flags f;
  f.command_line.assign(argv, argv + argc);
  app.add_option("--epochs", f.epochs, "Training epochs")->check(CLI::Range(1, 10'000));
  app.add_option("--batch-size", f.batch_size, "Samples per micro-batch")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--workers", f.workers, "Loader worker threads (each feed)")
      ->check(CLI::Range(1, 256));
  app.add_option("--images", f.images, "Training images to write (a fifth more are held out)")
      ->check(CLI::Range(10, 10'000'000));
  app.add_option("--min-side", f.min_side, "Shortest long side of a generated image, pixels")
      ->check(CLI::Range(32, 4096));
  app.add_option("--max-side", f.max_side, "Longest long side of a generated image, pixels")
      ->check(CLI::Range(32, 4096));
  app.add_option("--image-size", f.image_size, "The model's input side in pixels")
      ->check(CLI::Range(16, 1024));
  app.add_option("--accumulation-steps", f.accumulation_steps,
                 "Micro-batches per optimizer step (gradient accumulation)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--lr", f.lr, "Adam's learning rate")->check(CLI::PositiveNumber);
  app.add_option("--cache-dir", f.cache_dir, "Where the generated images are kept");
  app.add_option("--feed", f.feed, "Which data loader feeds the training")
      ->check(CLI::IsMember({"gpufeed", "libtorch", "both"}));
  app.add_option("--device", f.device,
                 "Where the training step runs: auto (the GPU when libtorch sees one), cpu, or "
                 "cuda (batches on the GPU, its utilization in the chart; refused without one)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--seed", f.seed, "Model initialisation, shuffle and augmentation seed");
  app.add_option("--json", f.json, "Also write the summary to this JSON file");
  app.add_option("--out-dir", f.out_dir,
                 "Write train_classifier.log (the printed lines), .svg (the chart) and .json here");
  app.add_option("--commit", f.commit, "The source's commit, recorded in the JSON and the chart");
  app.add_flag("--quick", f.quick,
               "A tiny run (300 images, 1 epoch) for smoke tests; explicit flags still apply");
  CLI11_PARSE(app, argc, argv);
  // gpufeed logs each loader's layout at level info; GPUFEED_LOG_LEVEL=info shows it.
  if (std::getenv("GPUFEED_LOG_LEVEL") == nullptr) gpufeed::set_log_level("warn");
  if (f.quick) {
    if (app.count("--images") == 0) f.images = 300;
    if (app.count("--epochs") == 0) f.epochs = 1;
  }
  if (f.min_side > f.max_side) {
    std::cerr << "train_classifier: error: --min-side " << f.min_side << " is above --max-side "
              << f.max_side << "\n";
    return 1;
  }
  try {
    return run(f);
  } catch (std::exception const& e) {
    print_error(e);
    return 1;
  }
}
