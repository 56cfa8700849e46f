// A RandomSampler instance, seeded with torch::manual_seed, and a model trained on its batches.
// libtorch's loader resets the sampler when each epoch begins (a fresh torch::randperm); so does
// gpufeed's, so the two builds print the same batches in the same order, and the same weights.

#include "datasets.hpp"
#include "twin.hpp"

int main() {
  torch::set_num_threads(1);
  torch::manual_seed(42);
  twin::indexed_dataset dataset{30};
  auto loader = feed::make_data_loader(
      dataset.map(torch::data::transforms::Stack<>()),
      torch::data::samplers::RandomSampler(static_cast<std::int64_t>(*dataset.size())),
      torch::data::DataLoaderOptions().batch_size(7));

  torch::nn::Linear model(3, 2);
  torch::optim::SGD optimizer(model->parameters(), /*lr=*/0.05);
  for (std::size_t epoch = 0; epoch < 3; ++epoch) {
    twin::print_epoch(epoch);
    for (auto& batch : *loader) {
      optimizer.zero_grad();
      auto loss = model->forward(batch.data).pow(2).mean();
      loss.backward();
      optimizer.step();
      twin::print_batch(batch);
    }
  }
  std::cout << "weights " << twin::values(model->weight) << "\n";
}
