// libtorch's tutorial loop: a dataset mapped through Normalize<> and Stack<>, the default
// RandomSampler, DataLoaderOptions with workers, range-for over two epochs, a training step.
// The order is shuffled: the two builds must give the same batches in each epoch, in any order.

#include "datasets.hpp"
#include "twin.hpp"

int main() {
  torch::manual_seed(1);
  auto dataset = twin::indexed_dataset{50}
                     .map(torch::data::transforms::Normalize<>(0.5, 2.0))
                     .map(torch::data::transforms::Stack<>());
  auto loader = feed::make_data_loader(std::move(dataset),
                                       torch::data::DataLoaderOptions().batch_size(8).workers(2));

  torch::nn::Linear model(3, 50);  // one class per example
  torch::optim::SGD optimizer(model->parameters(), /*lr=*/0.01);
  for (std::size_t epoch = 0; epoch < 2; ++epoch) {
    twin::print_epoch(epoch);
    for (auto& batch : *loader) {
      optimizer.zero_grad();
      auto loss =
          torch::nn::functional::cross_entropy(model->forward(batch.data.flatten(1)), batch.target);
      loss.backward();
      optimizer.step();
      twin::print_batch(batch);
    }
  }
}
