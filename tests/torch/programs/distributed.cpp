// The DDP idiom: a DistributedRandomSampler per rank, its epoch set before each epoch's loader
// is made (libtorch's loader offers no way to reach its sampler afterwards), and a
// DistributedSequentialSampler. Both builds must print each rank's share in the same order.

#include "datasets.hpp"
#include "twin.hpp"

int main() {
  twin::indexed_dataset dataset{21};
  auto const size = *dataset.size();
  for (std::size_t rank = 0; rank < 2; ++rank) {
    torch::data::samplers::DistributedRandomSampler sampler(size, /*num_replicas=*/2, rank);
    for (std::size_t epoch = 0; epoch < 2; ++epoch) {
      sampler.set_epoch(epoch);
      auto loader = feed::make_data_loader(dataset.map(torch::data::transforms::Stack<>()), sampler,
                                           torch::data::DataLoaderOptions(4));
      std::cout << "rank " << rank << "\n";
      twin::print_epoch(epoch);
      for (auto& batch : *loader) {
        twin::print_batch(batch);
      }
    }
  }
  auto loader = feed::make_data_loader(
      dataset.map(torch::data::transforms::Stack<>()),
      torch::data::samplers::DistributedSequentialSampler(size, /*num_replicas=*/3, /*rank=*/1),
      torch::data::DataLoaderOptions(3).workers(2));
  std::cout << "sequential rank 1 of 3\n";
  twin::print_epoch(0);
  for (auto& batch : *loader) {
    twin::print_batch(batch);
  }
}
