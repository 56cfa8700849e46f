// The complete example of docs/guide.md: a user-defined dataset, gradient accumulation,
// checkpoint and resume, statistics and error handling. Built as build/bin/guide_example and run by
// ctest (label "examples"); it exits non-zero if the loader breaks a promise it shows.
#include <gpufeed/gpufeed.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// 1. Describe the data once. read() is called concurrently by the worker threads and writes
//    one sample straight into the batch's memory: no allocation, no collate copy.
class toy_images final : public gpufeed::dataset {
 public:
  explicit toy_images(std::size_t size, std::size_t broken = SIZE_MAX)
      : size_{size}, broken_{broken} {}

  std::size_t size() const override { return size_; }

  gpufeed::sample_spec spec() const override {
    gpufeed::sample_spec spec;
    spec.add("image", gpufeed::dtype::u8, {8, 8, 3}).add("label", gpufeed::dtype::i64, {});
    return spec;
  }

  void read(std::size_t index, gpufeed::sample_view out,
            gpufeed::read_context const& ctx) const override {
    if (index == broken_) throw std::runtime_error("corrupt record");
    // ctx.seed depends on (loader seed, epoch, index) only: augmentations are reproducible
    // whatever the worker count.
    auto const jitter = ctx.seed % 16;
    auto image = out.as<std::uint8_t>(0);  // 8 * 8 * 3 bytes inside the batch's slot
    for (std::size_t i = 0; i < image.size(); ++i) {
      image[i] = static_cast<std::uint8_t>((index + i + jitter) % 256);
    }
    out.as<std::int64_t>(1)[0] = static_cast<std::int64_t>(index % 10);
  }

 private:
  std::size_t size_;
  std::size_t broken_;
};

// A stand-in for a training step's forward and backward: returns the batch's summed "loss".
double forward_backward(gpufeed::batch const& batch) {
  gpufeed::tensor_view labels = batch.field("label");  // shape [batch.size()], int64
  if (labels.device() >= 0) return 0;  // on a GPU the data is for kernels, not for the host
  double loss = 0;
  for (std::int64_t label : labels.as<std::int64_t>()) loss += static_cast<double>(label);
  return loss;
}

int run() {
  auto data = std::make_shared<toy_images>(1000);

  // 2. Say how to load it. batch_size is used exactly as given; 4 micro-batches of 32 make one
  //    optimizer step of 128 samples.
  gpufeed::loader_options options{.batch_size = 32,
                                  .workers = 4,
                                  .prefetch_depth = 4,
                                  .accumulation_steps = 4,
                                  .shuffle = true,
                                  .seed = 42};
  gpufeed::loader loader{data, options};
  std::cout << loader.batches_per_epoch() << " batches and " << loader.steps_per_epoch()
            << " optimizer steps per epoch, " << loader.batch_bytes() << " bytes per batch\n";

  // 3. Train: the epoch's order is a pure function of (seed, epoch, rank, world_size).
  gpufeed::loader_state checkpoint;
  std::vector<std::size_t> after_checkpoint;  // what followed the checkpoint, to check resume
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    loader.set_epoch(epoch);
    double step_loss = 0;
    std::size_t step_samples = 0;
    for (auto& batch : loader) {
      step_loss += forward_backward(batch);
      step_samples += batch.size();
      gpufeed::step_info const step = batch.step();
      if (step.last_micro) {
        // optimizer.step() here, with the loss divided by all the samples of the step.
        if (step_samples != step.samples_in_step) {
          std::cerr << "step " << step.step << ": " << step_samples << " samples, expected "
                    << step.samples_in_step << "\n";
          return 1;
        }
        if (step.short_step) {
          std::cout << "epoch " << epoch << " ends with a short step of " << step.micros_in_step
                    << " micro-batches, " << step.samples_in_step << " samples\n";
        }
        step_loss = 0;
        step_samples = 0;
      }
      // 4. Checkpoint: state() is tiny (seed, epoch, next batch) and resumes exactly.
      if (epoch == 1 && batch.sequence() == 9) checkpoint = loader.state();
      if (epoch == 1 && batch.sequence() >= 10) {
        auto const indices = batch.indices();
        after_checkpoint.insert(after_checkpoint.end(), indices.begin(), indices.end());
      }
    }
  }

  // 5. Read the counters: a stall fraction near 0 means the consumer never waited for data.
  gpufeed::stats const stats = loader.snapshot();
  std::cout << stats.to_string() << "\n"
            << "stall fraction " << stats.stall_fraction() << ", ring ready on average "
            << stats.ring_ready_mean << " of " << stats.ring_slots << " slots, " << stats.host_bytes
            << " bytes of ring memory\n";

  // 6. Resume from the checkpoint in a new loader, with another worker count: the rest of the
  //    epoch is exactly the same.
  options.workers = 2;
  gpufeed::loader resumed{data, options};
  resumed.restore(checkpoint);
  std::vector<std::size_t> replayed;
  for (auto& batch : resumed) {
    auto const indices = batch.indices();
    replayed.insert(replayed.end(), indices.begin(), indices.end());
  }
  if (replayed != after_checkpoint) {
    std::cerr << "resume from '" << checkpoint.to_string() << "' did not reproduce the epoch\n";
    return 1;
  }
  std::cout << "resumed from '" << checkpoint.to_string() << "': " << replayed.size()
            << " samples, identical\n";

  // 7. Errors: a dataset's exception reaches the consumer as a sample_error naming the sample.
  auto broken = std::make_shared<toy_images>(100, /*broken=*/37);
  gpufeed::loader strict{broken, {.batch_size = 10, .workers = 2}};
  bool raised = false;
  try {
    for (auto& batch : strict) static_cast<void>(batch);
  } catch (gpufeed::sample_error const& error) {
    raised = error.index() == 37;
    std::cout << "sample_error: index " << error.index() << ", epoch " << error.epoch()
              << ", worker " << error.worker() << ": " << error.what() << "\n";
    try {
      std::rethrow_if_nested(error);
    } catch (std::exception const& original) {
      std::cout << "  the dataset said: " << original.what() << "\n";
    }
  }
  if (!raised) {
    std::cerr << "expected a sample_error for index 37\n";
    return 1;
  }

  //    Or skip bad samples: they are counted and listed, and the epoch goes on.
  gpufeed::loader lenient{
      broken, {.batch_size = 10, .workers = 2, .on_error = gpufeed::error_policy::skip}};
  std::size_t delivered = 0;
  for (auto& batch : lenient) delivered += batch.size();
  gpufeed::stats const skips = lenient.snapshot();
  std::cout << "skip policy: " << delivered << " samples delivered, " << skips.skipped
            << " skipped\n";
  if (delivered != 99 || skips.skipped != 1 ||
      skips.skipped_indices != std::vector<std::size_t>{37}) {
    std::cerr << "expected 99 samples and index 37 skipped\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (std::exception const& error) {
    std::cerr << "guide_example: " << error.what() << "\n";
    return 1;
  }
}
