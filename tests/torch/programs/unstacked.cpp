// Datasets not mapped through Stack<>: libtorch's loader yields each batch as a
// std::vector of examples. Both builds must yield the same examples in the same order.

#include "datasets.hpp"
#include "twin.hpp"

int main() {
  auto loader = feed::make_data_loader<torch::data::samplers::SequentialSampler>(
      twin::indexed_dataset{10}, torch::data::DataLoaderOptions().batch_size(4).workers(2));
  twin::print_epoch(0);
  for (std::vector<torch::data::Example<>>& batch : *loader) {
    twin::print_batch(batch);
    for (auto& example : batch) {
      (void)example.data.sum();
    }
  }

  auto tensors = feed::make_data_loader<torch::data::samplers::SequentialSampler>(
      torch::data::datasets::TensorDataset(torch::arange(12, torch::kInt32).view({6, 2})), 4);
  twin::print_epoch(0);
  for (auto& batch : *tensors) {
    twin::print_batch(batch);
  }
}
