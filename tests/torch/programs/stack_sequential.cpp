// A SequentialSampler given as a template argument, drop_last, a batch size that does not
// divide the dataset, and the batch bound to libtorch's own type in the loop. In order: the two
// builds must print the same text.

#include "datasets.hpp"
#include "twin.hpp"

int main() {
  auto loader = feed::make_data_loader<torch::data::samplers::SequentialSampler>(
      twin::indexed_dataset{23}.map(torch::data::transforms::Stack<>()),
      torch::data::DataLoaderOptions(5).drop_last(true).workers(3));

  std::cout << "options batch_size=" << loader->options().batch_size
            << " drop_last=" << loader->options().drop_last
            << " enforce_ordering=" << loader->options().enforce_ordering << "\n";
  for (std::size_t epoch = 0; epoch < 2; ++epoch) {
    twin::print_epoch(epoch);
    for (torch::data::Example<>& batch : *loader) {
      twin::print_batch(batch);
    }
  }
}
