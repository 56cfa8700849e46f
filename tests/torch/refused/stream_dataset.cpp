// Must not compile: a StreamDataset's get_batch takes a count, not indices.
#include <gpufeed/torch.hpp>

struct endless : torch::data::datasets::StreamDataset<endless, std::vector<int>> {
  std::vector<int> get_batch(std::size_t n) override { return std::vector<int>(n); }
  torch::optional<std::size_t> size() const override { return torch::nullopt; }
};

int main() {
  auto loader = gpufeed::torch::make_data_loader(
      endless{}, torch::data::samplers::StreamSampler(30), std::size_t{10});
  for (auto& batch : *loader) (void)batch;
}
