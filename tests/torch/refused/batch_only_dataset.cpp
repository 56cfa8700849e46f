// Must not compile: only get_batch(indices), returning a batch that is not a vector of examples,
// so gpufeed's workers cannot read it one index at a time.
#include <gpufeed/torch.hpp>

struct sums : torch::data::datasets::BatchDataset<sums, int> {
  int get_batch(torch::ArrayRef<std::size_t> indices) override {
    return static_cast<int>(indices.size());
  }
  torch::optional<std::size_t> size() const override { return 10; }
};

int main() {
  auto loader = gpufeed::torch::make_data_loader(sums{}, std::size_t{2});
  for (int value : *loader) (void)value;
}
