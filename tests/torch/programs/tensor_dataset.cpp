// libtorch's TensorDataset stacked into TensorExample batches, with the defaults: no options at
// all (batch size 1), and an iterator loop written out with begin() and end().

#include "twin.hpp"

int main() {
  auto rows = torch::arange(15, torch::kFloat).view({5, 3});
  auto loader = feed::make_data_loader<torch::data::samplers::SequentialSampler>(
      torch::data::datasets::TensorDataset(rows).map(
          torch::data::transforms::Stack<torch::data::TensorExample>()));
  std::cout << "options batch_size=" << loader->options().batch_size << "\n";
  twin::print_epoch(0);
  for (auto it = loader->begin(); it != loader->end(); ++it) {
    twin::print_batch(*it);
  }
}
