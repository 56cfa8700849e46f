#pragma once
// The training loop: a linear model fitted to regression_dataset by SGD, data-parallel over the
// ranks of a torchrun job.
#include "cli.hpp"

namespace train_ddp {

/// Runs the training described by `options` on this rank; returns the exit code.
/// @throws on a failed rendezvous, a failed collective, a failed read or a failed dump.
int train(run_options const& options);

}  // namespace train_ddp
