#pragma once
// What the training loop sees of a data loader: micro-batches ready for the model, the time the
// loop spent waiting for them, and where the loader's own time went. Two implementations:
// gpufeed_feed.hpp and libtorch_feed.hpp.

#include <torch/torch.h>
#include <gpufeed/batch_plan.hpp>
#include <gpufeed/observe/process.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace train_classifier {

/// Per-channel normalisation of pixels in [0, 1], the same for both feeds.
inline constexpr std::array<float, 3> channel_mean{0.5F, 0.5F, 0.5F};
inline constexpr std::array<float, 3> channel_std{0.25F, 0.25F, 0.25F};

/// The augmentations, the same for both feeds (torchvision's semantics).
struct augmentation {
  float scale_min = 0.25F;  ///< RandomResizedCrop's area range: [scale_min, 1]
  float ratio_min = 3.0F / 4.0F;
  float ratio_max = 4.0F / 3.0F;
  float jitter = 0.4F;  ///< ColorJitter(brightness = contrast = saturation = jitter)
};

/// One feed's settings; both feeds get the same.
struct feed_options {
  std::filesystem::path folder;  ///< an image_folder: one directory per class
  int image_size = 64;           ///< the model's input: image_size x image_size
  std::size_t batch_size = 32;
  unsigned workers = 2;
  std::size_t accumulation_steps = 1;
  std::uint64_t seed = 1;
  /// true: shuffled, RandomResizedCrop + flip + ColorJitter; false: in order, resize to
  /// image_size * 256 / 224 and centre crop (torchvision's evaluation transform).
  bool train = true;
  augmentation augment{};
  torch::Device device{torch::kCPU};  ///< where the training step runs
};

/// One micro-batch, ready for the model.
struct micro_batch {
  torch::Tensor images;  ///< float32 [N, 3, H, W], normalised, on the training device
  torch::Tensor labels;  ///< int64 [N], on the training device
  gpufeed::step_info step{};
};

/// The stage times below are CPU times of the calling thread, so that a worker that waits for a
/// core (two workers and the training step share two cores) is not charged for the wait.
using gpufeed::observe::thread_cpu_seconds;

/// Where a feed's time went: CPU seconds summed over the threads that spent it, since the feed
/// was made. Stages a feed does not have stay 0.
struct pipeline_stages {
  std::uint64_t samples = 0;  ///< samples these times cover
  double decode_s = 0;        ///< reading and decoding the files
  double augment_s = 0;       ///< crop, resize, flip, colour jitter
  double convert_s = 0;       ///< uint8 -> normalised float32 (and HWC -> CHW)
  double stack_s = 0;         ///< collating samples into a batch
  double decoded_share = 1;   ///< pixels decoded / pixels in the files (1: all, full size)
  [[nodiscard]] double total_s() const noexcept {
    return decode_s + augment_s + convert_s + stack_s;
  }
};

/// The nearest-rank percentile of `values` (sorted here), q in [0, 1]; 0 for none.
[[nodiscard]] inline double percentile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  auto const rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

/// What one epoch of a feed measured, for gpufeed::diagnose (see training.cpp).
struct epoch_measure {
  double wall_s = 0;           ///< from the epoch's start to its end (the loop's time included)
  double first_batch_s = 0;    ///< from the epoch's start until the first batch arrived
  double first_wait_s = 0;     ///< of which the loop waited
  double wait_s = 0;           ///< all the loop's waits for batches
  double busy_s = 0;           ///< worker wall time spent producing samples (all workers)
  double slot_wait_s = 0;      ///< worker time idle for want of a free slot (gpufeed only)
  double busy_p50_s = 0;       ///< median wall time to produce one sample
  double busy_p99_s = 0;       ///< its 99th percentile
  std::size_t ring_slots = 0;  ///< batches the loader may prepare ahead
  std::vector<double> waits;   ///< each next()'s wait after the first batch, seconds
};

/// A data loader as the training loop uses it.
class feed {
 public:
  using clock = std::chrono::steady_clock;

  feed() = default;
  virtual ~feed() = default;
  feed(feed const&) = delete;
  feed& operator=(feed const&) = delete;
  feed(feed&&) = delete;
  feed& operator=(feed&&) = delete;

  /// Starts epoch `epoch` (0-based): its clock starts here.
  virtual void start_epoch(std::uint64_t epoch) = 0;
  /// The next micro-batch of the epoch, or nullopt at its end. Blocks until the loader has it.
  [[nodiscard]] std::optional<micro_batch> next() {
    auto const start = clock::now();
    auto batch = fetch();
    auto const waited = std::chrono::duration<double>(clock::now() - start).count();
    wait_s_ += waited;
    epoch_.wait_s += waited;
    if (batch) {
      if (!got_first_) {
        got_first_ = true;
        epoch_.first_batch_s = std::chrono::duration<double>(clock::now() - epoch_start_).count();
        epoch_.first_wait_s = waited;
      } else {
        epoch_.waits.push_back(waited);
      }
      batch->images = model_input(batch->images);
    }
    return batch;
  }
  /// Ends the epoch and returns what it measured.
  [[nodiscard]] epoch_measure end_epoch() {
    epoch_.wall_s = std::chrono::duration<double>(clock::now() - epoch_start_).count();
    finish_epoch(epoch_);
    return std::move(epoch_);
  }
  /// Micro-batches per epoch.
  [[nodiscard]] virtual std::size_t batches_per_epoch() const = 0;
  /// Where the feed's time went so far (conversion on the training side included).
  [[nodiscard]] virtual pipeline_stages stages() const = 0;
  /// Seconds spent blocked in the loader (the data wait), since construction.
  [[nodiscard]] double wait_seconds() const noexcept { return wait_s_; }

 protected:
  /// Called by start_epoch implementations first.
  void begin_epoch() {
    epoch_ = {};
    got_first_ = false;
    epoch_start_ = clock::now();
  }
  /// The loader's next batch (images as the loader delivers them), or nullopt at the epoch's end.
  [[nodiscard]] virtual std::optional<micro_batch> fetch() = 0;
  /// Makes the model's input from what fetch() delivered (gpufeed converts uint8 here).
  [[nodiscard]] virtual torch::Tensor model_input(torch::Tensor const& images) { return images; }
  /// Adds the loader's own figures (worker time, slots) to the epoch's.
  virtual void finish_epoch(epoch_measure& epoch) = 0;

 private:
  double wait_s_ = 0;
  epoch_measure epoch_;
  bool got_first_ = false;
  clock::time_point epoch_start_ = clock::now();
};

}  // namespace train_classifier
