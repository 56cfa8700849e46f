#pragma once
// The dataset these programs share, written as libtorch's documentation writes one: a class
// derived from torch::data::datasets::Dataset with get(index) and size(). Each example says
// which index it is, so that the printed batches show the order.

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>

namespace twin {

class indexed_dataset : public torch::data::datasets::Dataset<indexed_dataset> {
 public:
  explicit indexed_dataset(std::size_t size) : size_{size} {}

  torch::data::Example<> get(std::size_t index) override {
    auto const i = static_cast<float>(index);
    return {torch::tensor({i, i + 0.5F, -i}),
            torch::tensor(static_cast<std::int64_t>(index), torch::kInt64)};
  }

  torch::optional<std::size_t> size() const override { return size_; }

 private:
  std::size_t size_;
};

}  // namespace twin
