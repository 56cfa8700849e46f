// train_classifier: a small CNN trained on JPEGs with gpufeed, and the same training fed by
// libtorch's own data loader, side by side in one run (docs/torch.md). `scripts/demo` runs it.
//
//   train_classifier                      # both feeds, the default demo
//   train_classifier --feed gpufeed --epochs 8 --workers 4 --json run.json
//
// The first run writes the images (synthetic stripes in ten classes) into a cache folder; later
// runs reuse them. Exit status: 0, or 1 on an error (a non-finite loss included).

#include <torch/torch.h>
#include <CLI/CLI.hpp>
#include <gpufeed/log.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "gpufeed_feed.hpp"
#include "libtorch_feed.hpp"
#include "progress.hpp"
#include "summary.hpp"
#include "synthetic_images.hpp"
#include "training.hpp"

namespace {

namespace tc = train_classifier;

struct flags {
  std::size_t epochs = 4;
  std::size_t batch_size = 32;
  unsigned workers = 2;
  std::size_t images = 3000;
  int image_size = 64;
  std::size_t accumulation_steps = 2;
  double lr = 2e-3;
  std::string cache_dir = tc::default_cache_dir().string();
  std::string feed = "both";
  std::uint64_t seed = 1;
  std::string json;
  bool quick = false;
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

int run(flags const& f) {
  auto const start = std::chrono::steady_clock::now();
  auto const images = tc::ensure_synthetic_images(
      {.cache_dir = f.cache_dir, .train_images = f.images, .image_size = f.image_size});
  torch::Device const device =
      torch::cuda::is_available() ? torch::Device{torch::kCUDA, 0} : torch::Device{torch::kCPU};
  std::cout << "train_classifier: " << images.train_images << " training + " << images.val_images
            << " held-out JPEGs in " << tc::class_names().size() << " classes, " << f.image_size
            << "x" << f.image_size << " | batch " << f.batch_size << " x " << f.accumulation_steps
            << " micro-batches per step | " << f.workers << " workers | " << f.epochs
            << " epochs | Adam lr " << f.lr << " | " << device.str() << " ("
            << torch::get_num_threads() << " torch threads)\n";

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
  tc::progress_printer progress{device.is_cuda()};
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
  tc::print_summary(
      results, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());

  if (!f.json.empty()) {
    tc::write_json(f.json,
                   {.train_images = images.train_images,
                    .held_out_images = images.val_images,
                    .image_size = f.image_size,
                    .batch_size = f.batch_size,
                    .accumulation_steps = f.accumulation_steps,
                    .workers = f.workers,
                    .epochs = f.epochs,
                    .lr = f.lr,
                    .seed = f.seed,
                    .device = device.str(),
                    .torch_threads = torch::get_num_threads(),
                    .dataset = images.root.string()},
                   results);
    std::cout << "wrote " << f.json << "\n";
  }
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
      "Trains a small CNN on synthetic JPEGs (10 classes of stripes), fed by gpufeed and by "
      "libtorch's own data loader, and compares the two."};
  flags f;
  app.add_option("--epochs", f.epochs, "Training epochs")->check(CLI::Range(1, 10'000));
  app.add_option("--batch-size", f.batch_size, "Samples per micro-batch")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--workers", f.workers, "Loader worker threads (both feeds)")
      ->check(CLI::Range(1, 256));
  app.add_option("--images", f.images, "Training images to write (a fifth more are held out)")
      ->check(CLI::Range(10, 10'000'000));
  app.add_option("--image-size", f.image_size, "Training image side in pixels")
      ->check(CLI::Range(16, 1024));
  app.add_option("--accumulation-steps", f.accumulation_steps,
                 "Micro-batches per optimizer step (gradient accumulation)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--lr", f.lr, "Adam's learning rate")->check(CLI::PositiveNumber);
  app.add_option("--cache-dir", f.cache_dir, "Where the generated images are kept");
  app.add_option("--feed", f.feed, "Which data loader feeds the training")
      ->check(CLI::IsMember({"gpufeed", "libtorch", "both"}));
  app.add_option("--seed", f.seed, "Model initialisation and shuffle seed");
  app.add_option("--json", f.json, "Also write the summary to this JSON file");
  app.add_flag("--quick", f.quick,
               "A tiny run (300 images, 1 epoch) for smoke tests; explicit flags still apply");
  CLI11_PARSE(app, argc, argv);
  // gpufeed logs each loader's layout at level info; GPUFEED_LOG_LEVEL=info shows it.
  if (std::getenv("GPUFEED_LOG_LEVEL") == nullptr) gpufeed::set_log_level("warn");
  if (f.quick) {
    if (app.count("--images") == 0) f.images = 300;
    if (app.count("--epochs") == 0) f.epochs = 1;
  }
  try {
    return run(f);
  } catch (std::exception const& e) {
    print_error(e);
    return 1;
  }
}
