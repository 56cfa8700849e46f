#include "trainer.hpp"

#include <torch/torch.h>
#include <gpufeed/torch.hpp>
#if TRAIN_DDP_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include "dumps.hpp"
#include "gradient_sync.hpp"
#include "process_group.hpp"
#include "regression_dataset.hpp"

namespace train_ddp {
namespace {

backend choose_backend(std::string const& name) {
  if (name == "gloo") return backend::gloo;
  if (name == "nccl") {
    if (!nccl_available()) {
      throw std::runtime_error{
          "--backend nccl: this train_ddp was built without NCCL (it needs a libtorch with CUDA "
          "and NCCL's header); use --backend gloo"};
    }
    return backend::nccl;
  }
  return nccl_available() && torch::cuda::is_available() ? backend::nccl : backend::gloo;
}

// The loader of this rank's shard: gpufeed's sampler gives rank r of W a disjoint share of every
// epoch, from the same seeded permutation on every rank.
gpufeed::torch::data_loader make_loader(run_options const& o, torch::Device device) {
  auto data = std::make_shared<regression_dataset const>(o.samples, o.features, o.seed, o.chunk);
  gpufeed::torch::data_loader_options options{o.batch_size};
  options.workers(o.workers).prefetch_depth(4).seed(o.seed).shuffle(true);
  // Rank and world size: the loader reads RANK and WORLD_SIZE itself, as read_launch_env did.
  options.loader().chunk_window = o.chunk > 1 ? o.chunk_window : 0;
#if GPUFEED_TORCH_WITH_CUDA
  if (device.is_cuda()) options.device(device.index());  // batches land on this rank's GPU
#else
  (void)device;
#endif
  return gpufeed::torch::data_loader{std::move(data), std::move(options)};
}

// Steps in `epoch`: the most batches any rank has (shards differ by at most one sample, so
// by at most one batch), capped by --steps. Every rank runs them all, to make the same
// collective calls; a rank out of batches contributes no samples.
std::size_t steps_in_epoch(process_group& group, gpufeed::loader const& loader, std::size_t cap,
                           torch::Device device) {
  auto most = torch::tensor({static_cast<double>(loader.batches_per_epoch())},
                            torch::TensorOptions{}.dtype(torch::kDouble).device(device));
  group.max(most);
  auto const steps = static_cast<std::size_t>(most.item<double>());
  return cap == 0 ? steps : std::min(steps, cap);
}

}  // namespace

int train(run_options const& o) {
  auto const env = read_launch_env();
  auto const kind = choose_backend(o.backend);
  torch::Device const device =
      kind == backend::nccl
          ? torch::Device{torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank)}
          : torch::Device{torch::kCPU};
#if TRAIN_DDP_WITH_NCCL
  if (device.is_cuda()) c10::cuda::set_device(device.index());  // NCCL works on the current one
#endif
  bool const lead = env.rank == 0;
  process_group group{env, kind,
                      std::chrono::milliseconds{static_cast<std::int64_t>(o.timeout_s * 1000)}};

  auto loader = make_loader(o, device);
  std::cout << "rank " << env.rank << "/" << env.world_size << " on " << device << " ("
            << (kind == backend::nccl ? "NCCL" : "Gloo")
            << "): " << loader.loader().batches_per_epoch() << " batches of " << o.batch_size
            << " per epoch, from its shard of the " << o.samples << " samples\n"
            << std::flush;

  torch::manual_seed(o.seed);  // the same initial weights on every rank; the broadcast ensures it
  torch::nn::Linear model{static_cast<std::int64_t>(o.features), 1};
  model->to(device);
  auto const parameters = model->parameters();
  broadcast_parameters(group, parameters);
  torch::optim::SGD optimizer{parameters, torch::optim::SGDOptions{o.lr}};

  index_log indices{o.dump_indices.empty() ? "" : rank_path(o.dump_indices, env.rank)};
  std::uint64_t step = 0;
  for (std::uint64_t epoch = 0; epoch < o.epochs; ++epoch) {
    loader.loader().set_epoch(epoch);  // the same shuffle on every rank, a new one per epoch
    auto const local_batches = loader.loader().batches_per_epoch();
    auto const steps = steps_in_epoch(group, loader.loader(), o.steps, device);
    double loss_sum = 0;
    std::int64_t samples = 0;
    for (std::size_t s = 0; s < steps; ++s) {
      optimizer.zero_grad();
      std::int64_t local_samples = 0;
      double local_loss = 0;
      if (s < local_batches) {
        if (auto batch = loader.next()) {
          auto const loss =
              torch::mse_loss(model->forward(batch->data.to(device)), batch->target.to(device));
          loss.backward();
          local_samples = batch->size();
          local_loss = loss.item<double>();
          indices.add(batch->indices);
        }
      }
      auto const totals = average_gradients(group, parameters, local_samples, local_loss);
      optimizer.step();
      loss_sum += totals.mean_loss * static_cast<double>(totals.samples);
      samples += totals.samples;
      if (++step == 1 && !o.dump_weights.empty()) {
        write_weights(rank_path(o.dump_weights, env.rank, ".step1.txt"), *model);
      }
    }
    indices.end_epoch(epoch);
    if (lead) {
      std::cout << "epoch " << epoch << ": " << steps << " steps, " << samples
                << " samples over all ranks, mean loss "
                << (samples > 0 ? loss_sum / static_cast<double>(samples) : 0.0) << "\n"
                << std::flush;
    }
  }
  if (!o.dump_weights.empty()) write_weights(rank_path(o.dump_weights, env.rank), *model);
  return 0;
}

}  // namespace train_ddp
