#pragma once
/// @file
/// @brief How one rank's epoch is cut into batches and batches are grouped into optimizer steps.
///
/// Batches have exactly `batch_size` samples, except a short last batch when
/// `last_batch == keep`. With `accumulation_steps = K`, batches 0..K-1 form step 0, K..2K-1 step
/// 1, and so on; a step never straddles an epoch. A last step of fewer than K micro-batches is
/// kept (and `step_info::micros_in_step < K` says so) or dropped, per `last_step`.
///
/// A plan may also be made from the sizes of its batches (a caller's batch sampler decides
/// them): each batch then has its own size, at most the loader's `batch_size`.

#include <cstddef>
#include <span>
#include <vector>

#include "gpufeed/options.hpp"

namespace gpufeed {

/// @brief Where a batch sits in gradient accumulation.
struct step_info {
  std::size_t step = 0;             ///< optimizer step within the epoch
  std::size_t micro = 0;            ///< this batch's index within its step
  std::size_t micros_in_step = 0;   ///< micro-batches in this step (K, or fewer for a short last)
  std::size_t samples_in_step = 0;  ///< samples in the whole step: divide the summed loss by it
  bool last_micro = false;          ///< step the optimizer after this batch
  bool short_step = false;          ///< this step has fewer than K x batch_size samples
  friend bool operator==(step_info const&, step_info const&) = default;
};

/// @brief A batch's samples: positions [first, first + count) of the rank's shard.
struct batch_span {
  std::size_t first = 0;
  std::size_t count = 0;
  friend bool operator==(batch_span const&, batch_span const&) = default;
};

/// @brief The batches and steps of one epoch of one rank. Pure arithmetic, no storage, unless
/// it is made from explicit batch sizes (then one offset per batch).
class batch_plan {
 public:
  /// @throws logic_error if batch_size or accumulation_steps is 0.
  batch_plan(std::size_t shard_size, std::size_t batch_size, std::size_t accumulation_steps,
             tail_policy last_batch, tail_policy last_step);
  /// @brief Batches of the given sizes, in order, over `sum(batch_sizes)` shard positions.
  /// `batch_size` is the largest a batch may be (a step is short when it has fewer than
  /// accumulation_steps x batch_size samples).
  /// @throws logic_error if a size is 0 or above batch_size, or accumulation_steps is 0.
  batch_plan(std::span<std::size_t const> batch_sizes, std::size_t batch_size,
             std::size_t accumulation_steps, tail_policy last_step);

  /// @brief Batches delivered per epoch.
  [[nodiscard]] std::size_t batches() const noexcept { return batches_; }
  /// @brief Optimizer steps per epoch.
  [[nodiscard]] std::size_t steps() const noexcept { return steps_; }
  /// @brief Samples delivered per epoch (before any skipped by the error policy).
  [[nodiscard]] std::size_t samples() const noexcept;
  /// @brief The shard positions of batch `sequence` (< batches()).
  [[nodiscard]] batch_span span(std::size_t sequence) const noexcept;
  /// @brief The step information of batch `sequence` (< batches()).
  [[nodiscard]] step_info step(std::size_t sequence) const noexcept;

 private:
  /// The first shard position of batch `sequence` (sequence <= batches()).
  [[nodiscard]] std::size_t offset(std::size_t sequence) const noexcept;

  std::size_t shard_size_;
  std::size_t batch_size_;
  std::size_t accumulation_;
  std::size_t batches_ = 0;
  std::size_t steps_ = 0;
  std::vector<std::size_t> offsets_;  // explicit sizes only: batches_ + 1 prefix sums
};

}  // namespace gpufeed
