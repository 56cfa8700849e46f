#pragma once
// Keeping the ranks' models identical: the same initial weights everywhere, then every optimizer
// step from the same averaged gradients. (torch::nn::parallel has no DistributedDataParallel in
// C++; this is what it does, without the bucketing and the overlap with backward.)
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "process_group.hpp"

namespace train_ddp {

/// Copies rank 0's parameters into every rank's `parameters` (one broadcast of one flat buffer).
void broadcast_parameters(process_group& group, std::vector<torch::Tensor> const& parameters);

/// What `average_gradients` found across the ranks.
struct step_totals {
  std::int64_t samples = 0;  ///< in this step's batches, over all ranks
  double mean_loss = 0;      ///< the loss averaged over those samples
};

/// Turns every rank's gradients of a mean loss over `local_samples` samples into the gradients of
/// the mean loss over all ranks' samples: sum over ranks of (gradient x local_samples), divided by
/// the total, with one allreduce of one flat buffer. A rank whose shard has run out passes 0
/// samples (its gradients, defined or not, count as zero), so that the ranks still make the same
/// collective calls when their shards differ by a batch. With equal batches on every rank this is
/// the plain average of the ranks' gradients. Afterwards every rank holds bitwise the same
/// gradients. @param local_loss this rank's mean loss (ignored when local_samples is 0).
step_totals average_gradients(process_group& group, std::vector<torch::Tensor> const& parameters,
                              std::int64_t local_samples, double local_loss);

}  // namespace train_ddp
