#pragma once
// libtorch datasets shared by the gpufeed::torch suites, written as libtorch's users write them.
//
// - rows_dataset: whole tensors in memory, get(i) returns row i (optionally one of the wrong
//   shape).
// - index_dataset: each example says its index (data [i, i + 0.5], target i), and targets can
//   be bool.
// - libtorch_batches: libtorch's own stacked batches of a dataset, for comparisons.

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace torch_test {

class rows_dataset : public torch::data::datasets::Dataset<rows_dataset> {
 public:
  explicit rows_dataset(std::int64_t n, std::int64_t odd_one = -1) : odd_one_{odd_one} {
    torch::manual_seed(7);
    images_ = torch::rand({n, 3, 5, 4});
    labels_ = torch::randint(0, 10, {n}, torch::kInt64);
  }
  torch::data::Example<> get(std::size_t index) override {
    auto const i = static_cast<std::int64_t>(index);
    if (i == odd_one_) return {torch::zeros({3, 4, 4}), labels_[i]};  // the wrong shape
    return {images_[i], labels_[i]};
  }
  torch::optional<std::size_t> size() const override {
    return static_cast<std::size_t>(images_.size(0));
  }
  [[nodiscard]] torch::Tensor const& images() const { return images_; }
  [[nodiscard]] torch::Tensor const& labels() const { return labels_; }

 private:
  torch::Tensor images_;
  torch::Tensor labels_;
  std::int64_t odd_one_;
};

class index_dataset : public torch::data::datasets::Dataset<index_dataset> {
 public:
  explicit index_dataset(std::size_t n, bool bool_target = false)
      : n_{n}, bool_target_{bool_target} {}
  torch::data::Example<> get(std::size_t index) override {
    auto const i = static_cast<float>(index);
    auto target = bool_target_ ? torch::tensor({index % 2 == 0, index % 3 == 0})
                               : torch::tensor(static_cast<std::int64_t>(index));
    return {torch::tensor({i, i + 0.5F}), std::move(target)};
  }
  torch::optional<std::size_t> size() const override { return n_; }

 private:
  std::size_t n_;
  bool bool_target_;
};

/// The dataset index of each sample of a batch of index_dataset's, in batch order.
inline std::vector<std::int64_t> indices_in(torch::Tensor const& data) {
  auto const first = data.select(1, 0).to(torch::kInt64).contiguous();
  return {first.data_ptr<std::int64_t>(), first.data_ptr<std::int64_t>() + first.numel()};
}

/// libtorch's own batches of `dataset` (which ends in .map(Stack<>())) in `sampler`'s order.
template <class Dataset, class Sampler>
std::vector<torch::data::Example<>> libtorch_batches(Dataset dataset, Sampler sampler,
                                                     torch::data::DataLoaderOptions options,
                                                     std::size_t epochs = 1) {
  auto loader =
      torch::data::make_data_loader(std::move(dataset), std::move(sampler), std::move(options));
  std::vector<torch::data::Example<>> out;
  for (std::size_t e = 0; e < epochs; ++e) {
    for (auto& b : *loader) out.push_back(b);
  }
  return out;
}

}  // namespace torch_test
