// A sampler of the program's own, derived from torch::data::samplers::Sampler<> (every other
// index, from the last down), bool targets, a batch size given as a plain number, and join().

#include "twin.hpp"

namespace {

class every_other_backwards : public torch::data::samplers::Sampler<> {
 public:
  explicit every_other_backwards(std::size_t size) : size_{size} {}
  void reset(torch::optional<std::size_t> new_size = torch::nullopt) override {
    if (new_size.has_value()) size_ = *new_size;
    next_ = 0;
  }
  torch::optional<std::vector<std::size_t>> next(std::size_t batch_size) override {
    std::vector<std::size_t> out;
    while (out.size() < batch_size && 2 * next_ < size_) {
      out.push_back(size_ - 1 - 2 * next_);
      ++next_;
    }
    if (out.empty()) return torch::nullopt;
    return out;
  }
  void save(torch::serialize::OutputArchive&) const override {}
  void load(torch::serialize::InputArchive&) override {}

 private:
  std::size_t size_;
  std::size_t next_ = 0;
};

class flags_dataset : public torch::data::datasets::Dataset<flags_dataset> {
 public:
  torch::data::Example<> get(std::size_t index) override {
    return {torch::full({2}, static_cast<double>(index), torch::kDouble),
            torch::tensor({index % 2 == 0, index % 3 == 0})};
  }
  torch::optional<std::size_t> size() const override { return 17; }
};

}  // namespace

int main() {
  auto loader = feed::make_data_loader(flags_dataset{}.map(torch::data::transforms::Stack<>()),
                                       every_other_backwards(17), 3);
  for (std::size_t epoch = 0; epoch < 2; ++epoch) {
    twin::print_epoch(epoch);
    for (auto& batch : *loader) {
      twin::print_batch(batch);
    }
  }
  loader->join();
  std::cout << "joined\n";
}
