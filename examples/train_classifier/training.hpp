#pragma once
// The training run, the same whichever feed delivers the batches: the model is built from the
// same seed, trained with gradient accumulation, then scored on the held-out images.

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "feed.hpp"
#include "progress.hpp"

namespace train_classifier {

/// How to train.
struct training_options {
  std::size_t epochs = 4;
  double lr = 2e-3;        ///< Adam's learning rate
  std::uint64_t seed = 1;  ///< the model's initial weights
  std::int64_t classes = 10;
  torch::Device device{torch::kCPU};
};

/// What one run did.
struct run_result {
  std::string feed;
  std::size_t epochs = 0;
  std::uint64_t samples = 0;     ///< training samples, all epochs
  std::uint64_t steps = 0;       ///< optimizer steps
  double train_seconds = 0;      ///< wall time of the training, from the loader's construction
  double wait_seconds = 0;       ///< of which blocked waiting for batches
  double final_loss = 0;         ///< mean training loss of the last epoch
  double train_accuracy = 0;     ///< on the (augmented) training batches of the last epoch, 0-1
  double held_out_accuracy = 0;  ///< 0-1
  std::uint64_t held_out_samples = 0;

  [[nodiscard]] double samples_per_s() const {
    return train_seconds > 0 ? static_cast<double>(samples) / train_seconds : 0;
  }
  [[nodiscard]] double wait_share() const {
    return train_seconds > 0 ? wait_seconds / train_seconds : 0;
  }
};

/// Runs one forward and backward pass of a throwaway model, so that libtorch's one-time set-up
/// (thread pools, kernels, allocator) is not charged to whichever run comes first.
void warm_up(training_options const& options, feed_options const& feed);

/// Makes a feed (make_gpufeed_feed or make_libtorch_feed).
using feed_factory = std::unique_ptr<feed> (*)(feed_options const&);

/// Trains a fresh model on batches from `make(train)`, then evaluates it on `make(held_out)`.
/// The optimizer steps after the last micro-batch of each step; each micro-batch's summed loss is
/// divided by the samples of its whole step, so a step's gradient is its mean over the step.
/// @throws std::runtime_error when the loss stops being finite.
[[nodiscard]] run_result train_and_evaluate(std::string const& name, feed_factory make,
                                            feed_options const& train, feed_options const& held_out,
                                            training_options const& options,
                                            progress_printer& progress);

}  // namespace train_classifier
