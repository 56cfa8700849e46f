// Must not compile: a ChunkDataset (shared, as libtorch's documentation makes one) is stateful.
#include <gpufeed/torch.hpp>

struct reader : torch::data::datasets::ChunkDataReader<int> {
  using BatchType = ChunkType;  // ChunkDataset reads it
  ChunkType read_chunk(std::size_t) override { return ChunkType(5, 1); }
  std::size_t chunk_count() override { return 2; }
  void reset() override {}
};

int main() {
  using chunks =
      torch::data::datasets::ChunkDataset<reader, torch::data::samplers::SequentialSampler,
                                          torch::data::samplers::SequentialSampler>;
  torch::data::samplers::SequentialSampler sampler(0);
  auto dataset = torch::data::datasets::make_shared_dataset<chunks>(
      reader{}, sampler, sampler, torch::data::datasets::ChunkDatasetOptions(1, 5));
  auto loader = gpufeed::torch::make_data_loader(dataset, std::size_t{5});
  for (auto& batch : *loader) (void)batch;
}
