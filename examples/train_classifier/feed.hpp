#pragma once
// What the training loop sees of a data loader: micro-batches ready for the model, and the time
// the loop spent waiting for them. Two implementations: gpufeed_feed.hpp and libtorch_feed.hpp.

#include <torch/torch.h>
#include <gpufeed/batch_plan.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>

namespace train_classifier {

/// Per-channel normalisation of pixels in [0, 1], the same for both feeds.
inline constexpr std::array<float, 3> channel_mean{0.5F, 0.5F, 0.5F};
inline constexpr std::array<float, 3> channel_std{0.25F, 0.25F, 0.25F};

/// One feed's settings; both feeds get the same.
struct feed_options {
  std::filesystem::path folder;  ///< an image_folder: one directory per class
  int image_size = 64;           ///< images are resized to image_size x image_size
  std::size_t batch_size = 32;
  unsigned workers = 2;
  std::size_t accumulation_steps = 1;
  std::uint64_t seed = 1;
  bool train = true;  ///< shuffled, with random left-right flips; false: in order, no flips
  torch::Device device{torch::kCPU};  ///< where the training step runs
};

/// One micro-batch, ready for the model.
struct micro_batch {
  torch::Tensor images;  ///< float32 [N, 3, H, W], normalised, on the training device
  torch::Tensor labels;  ///< int64 [N], on the training device
  gpufeed::step_info step{};
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

  /// The next micro-batch of the epoch, or nullopt at its end (the next call starts the next
  /// epoch). Blocks until the loader has the batch.
  [[nodiscard]] virtual std::optional<micro_batch> next() = 0;
  /// Micro-batches per epoch.
  [[nodiscard]] virtual std::size_t batches_per_epoch() const = 0;
  /// Seconds spent blocked in the loader (the data wait), since construction.
  [[nodiscard]] double wait_seconds() const noexcept { return wait_s_; }

 protected:
  /// Adds the time since `start` to the data wait.
  void waited_since(clock::time_point start) noexcept {
    wait_s_ += std::chrono::duration<double>(clock::now() - start).count();
  }

 private:
  double wait_s_ = 0;
};

}  // namespace train_classifier
