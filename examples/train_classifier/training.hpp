#pragma once
// The training run, the same whichever feed delivers the batches: the model is built from the
// same seed, trained with gradient accumulation, then scored on the held-out images. The run
// records its pace over time (for the chart) and what its feed measured (for the diagnosis).

#include <torch/torch.h>
#include <gpufeed/diagnosis.hpp>
#include <gpufeed/stats.hpp>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "classifier.hpp"
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

/// The pace of a run over one interval of its own clock.
struct pace_sample {
  double t_s = 0;                     ///< the run's training time at the interval's end
  double samples_per_s = 0;           ///< over the interval
  double wait_share = 0;              ///< time blocked waiting for data / the interval, 0-1
  std::optional<double> gpu_percent;  ///< GPU utilization then, where a GPU is watched
};

/// What one run did.
struct run_result {
  std::string feed;
  std::size_t epochs = 0;
  unsigned workers = 0;
  std::uint64_t samples = 0;     ///< training samples, all epochs
  std::uint64_t batches = 0;     ///< training micro-batches, all epochs
  std::uint64_t steps = 0;       ///< optimizer steps
  double train_seconds = 0;      ///< wall time of the training epochs (loader set-up included)
  double wait_seconds = 0;       ///< of which blocked waiting for batches
  double cpu_seconds = 0;        ///< CPU time of the whole process meanwhile (all threads)
  double final_loss = 0;         ///< mean training loss of the last epoch
  double train_accuracy = 0;     ///< on the (augmented) training batches of the last epoch, 0-1
  double held_out_accuracy = 0;  ///< 0-1
  std::uint64_t held_out_samples = 0;
  pipeline_stages stages;                     ///< where the training feed's time went
  std::vector<epoch_measure> epoch_measures;  ///< per training epoch
  std::vector<pace_sample> pace;              ///< over the run's own clock
  gpufeed::diagnosis diagnosis;               ///< gpufeed::diagnose of the run's figures

  [[nodiscard]] double samples_per_s() const {
    return train_seconds > 0 ? static_cast<double>(samples) / train_seconds : 0;
  }
  [[nodiscard]] double cpu_ms_per_sample() const {
    return samples > 0 ? 1e3 * cpu_seconds / static_cast<double>(samples) : 0;
  }
  [[nodiscard]] double cpu_cores() const {
    return train_seconds > 0 ? cpu_seconds / train_seconds : 0;
  }
  [[nodiscard]] double wait_share() const {
    return train_seconds > 0 ? wait_seconds / train_seconds : 0;
  }
};

/// The run's figures as gpufeed::stats, so that gpufeed::diagnose can judge any loader: the
/// epochs' wall and wait times summed (each epoch's start-up counted as the "first batch"), the
/// workers' busy time as read_s, the waits' distribution from the loop's own measurements.
[[nodiscard]] gpufeed::stats as_loader_stats(run_result const& run);

/// Runs one forward and backward pass of a throwaway model, so that libtorch's one-time set-up
/// (thread pools, kernels, allocator) is not charged to whichever run comes first.
void warm_up(training_options const& options, feed_options const& feed);

/// Makes a feed (make_gpufeed_feed or make_libtorch_feed).
using feed_factory = std::unique_ptr<feed> (*)(feed_options const&);

/// One training run: a fresh model (initialised from `training_options::seed`, so every run
/// starts from the same weights), its Adam optimizer and its feed. Runs of different feeds can be
/// interleaved epoch by epoch, so that a machine whose speed drifts (other jobs, clock changes)
/// affects them alike; each run's clock counts only its own epochs.
///
/// The optimizer steps after the last micro-batch of each step; each micro-batch's summed loss is
/// divided by the samples of its whole step, so a step's gradient is its mean over the step.
class training_run {
 public:
  training_run(std::string name, feed_factory make, feed_options train, feed_options held_out,
               training_options const& options);

  /// Trains one epoch (the first also constructs the training feed, on the run's clock).
  /// @throws std::runtime_error when the loss stops being finite.
  void train_epoch(progress_printer& progress);
  /// Stops the training feed, scores the model on the held-out images and diagnoses the run.
  void evaluate();
  [[nodiscard]] run_result const& result() const noexcept { return result_; }

 private:
  void record_pace(double run_seconds, double wait_seconds, progress_printer const& progress);

  feed_factory make_;
  feed_options train_;
  feed_options held_out_;
  training_options options_;
  classifier model_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  std::unique_ptr<feed> feed_;
  run_result result_;
  std::clock_t cpu_ = 0;  // CPU time of the run's epochs so far, in clock() ticks
  // The open interval of the pace series.
  double pace_start_s_ = 0;
  double pace_wait_start_s_ = 0;
  std::uint64_t pace_samples_start_ = 0;
};

}  // namespace train_classifier
