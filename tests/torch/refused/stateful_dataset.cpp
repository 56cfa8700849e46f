// Must not compile: a StatefulDataset decides its own batches (check_refusals.py checks that the
// first error is gpufeed's and names the fix).
#include <gpufeed/torch.hpp>

struct counter : torch::data::datasets::StatefulDataset<counter, int, std::size_t> {
  torch::optional<int> get_batch(std::size_t) override { return torch::nullopt; }
  torch::optional<std::size_t> size() const override { return 10; }
  void reset() override {}
  void save(torch::serialize::OutputArchive&) const override {}
  void load(torch::serialize::InputArchive&) override {}
};

int main() {
  auto loader = gpufeed::torch::make_data_loader(counter{});
  for (int value : *loader) (void)value;
}
