#include "gradient_sync.hpp"

#include <cstddef>

namespace train_ddp {
namespace {

torch::Tensor flatten(std::vector<torch::Tensor> const& tensors) {
  std::vector<torch::Tensor> flat;
  flat.reserve(tensors.size());
  for (auto const& t : tensors) flat.push_back(t.detach().reshape({-1}));
  return torch::cat(flat);
}

// Copies consecutive slices of `flat` into `targets` (which must add up to its length).
void unflatten_into(torch::Tensor const& flat, std::vector<torch::Tensor> const& targets) {
  torch::NoGradGuard no_grad;
  std::int64_t offset = 0;
  for (auto const& t : targets) {
    t.copy_(flat.slice(0, offset, offset + t.numel()).view_as(t));
    offset += t.numel();
  }
}

}  // namespace

void broadcast_parameters(process_group& group, std::vector<torch::Tensor> const& parameters) {
  if (group.world_size() == 1) return;
  auto flat = flatten(parameters).contiguous();
  group.broadcast(flat);
  unflatten_into(flat, parameters);
}

step_totals average_gradients(process_group& group, std::vector<torch::Tensor> const& parameters,
                              std::int64_t local_samples, double local_loss) {
  // [gradients x samples ..., samples, loss x samples] in double: the sums of the counts and
  // losses stay exact, and the gradients are rounded once, after the division.
  std::vector<torch::Tensor> parts;
  parts.reserve(parameters.size() + 1);
  auto const weight = static_cast<double>(local_samples);
  for (auto const& p : parameters) {
    auto const& grad = p.grad();
    parts.push_back(local_samples > 0 && grad.defined()
                        ? grad.detach().reshape({-1}).to(torch::kDouble) * weight
                        : torch::zeros({p.numel()}, p.options().dtype(torch::kDouble)));
  }
  parts.push_back(torch::tensor({weight, local_samples > 0 ? local_loss * weight : 0.0},
                                parameters.front().options().dtype(torch::kDouble)));
  auto buffer = torch::cat(parts);
  group.sum(buffer);

  auto const gradients = buffer.numel() - 2;
  auto const totals = buffer.slice(0, gradients).to(torch::kCPU);
  step_totals result;
  auto const samples = totals[0].item<double>();
  result.samples = static_cast<std::int64_t>(samples);
  if (result.samples == 0) return result;
  result.mean_loss = totals[1].item<double>() / samples;

  auto const mean = buffer.slice(0, 0, gradients) / samples;
  std::int64_t offset = 0;
  for (auto const& p : parameters) {
    auto const n = p.numel();
    p.mutable_grad() = mean.slice(0, offset, offset + n).view_as(p).to(p.dtype());
    offset += n;
  }
  return result;
}

}  // namespace train_ddp
