#pragma once
/// @file
/// @brief Any libtorch dataset as a gpufeed dataset.
///
/// A `torch::data::datasets::Dataset<Self, Example<>>` (with `get(i)` and `size()`), the same
/// mapped with example transforms (`.map(Normalize<>(...))`), and either mapped with `Stack<>`
/// (the stacking is gpufeed's: each example's tensors are copied once into the batch's slot).
/// Every example must have the shapes and dtypes of example 0.

#include <torch/torch.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpufeed/dataset.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/sample_spec.hpp"
#include "gpufeed/sample_view.hpp"

namespace gpufeed::torch {

namespace detail {

/// The tensors of one example, `data` first and `target` second when there is one.
struct example_tensors {
  ::torch::Tensor data;
  ::torch::Tensor target;  // undefined for examples without a target (TensorExample)
};

/// The spec ("data", "target") of example 0. @throws logic_error for undefined or
/// complex-typed tensors.
[[nodiscard]] sample_spec spec_of(example_tensors const& first);
/// Copies one example into `out`. @throws logic_error naming `index` when a shape or dtype
/// differs from the spec, or a tensor is not on the CPU.
void copy_example(example_tensors const& example, sample_view out, std::size_t index);

template <class T>
struct is_stack_map : std::false_type {};
template <class Source, class Example>
struct is_stack_map<
    ::torch::data::datasets::MapDataset<Source, ::torch::data::transforms::Stack<Example>>>
    : std::true_type {};

template <class E>
example_tensors tensors_of(E const& example) {
  if constexpr (requires { example.target; }) {
    return {example.data, example.target};
  } else {  // TensorExample: data only
    return {example.data, {}};
  }
}

/// Example `index` of `data`, unwrapping a final Stack (gpufeed stacks into its slot).
template <class Dataset>
example_tensors example_at(Dataset& data, std::size_t index) {
  if constexpr (is_stack_map<Dataset>::value) {
    // MapDataset::dataset() is const only: get() is not, and the wrapped dataset is this
    // worker's own non-const copy, so casting the const away is sound.
    using source = std::remove_cvref_t<decltype(data.dataset())>;
    return example_at(const_cast<source&>(data.dataset()), index);
  } else {
    // get_batch of one index: a plain Dataset answers with get(index), a MapDataset also
    // applies its example transforms.
    auto batch = data.get_batch(::torch::ArrayRef<std::size_t>{index});
    using batch_type = decltype(batch);
    if constexpr (requires {
                    batch.size();
                    batch[0].data;
                  }) {
      GPUFEED_EXPECTS(batch.size() == 1, "gpufeed::torch: get_batch of one index returned " +
                                             std::to_string(batch.size()) + " examples");
      return tensors_of(batch[0]);
    } else {
      static_assert(
          requires { batch.data; }, "gpufeed::torch: unsupported libtorch batch type");
      // A batch transform other than Stack gave one example with a leading batch dimension.
      auto one = tensors_of(batch);
      (void)sizeof(batch_type);
      return {one.data[0], one.target.defined() ? one.target[0] : ::torch::Tensor{}};
    }
  }
}

template <class Dataset>
std::size_t size_of(Dataset const& data) {
  auto const size = data.size();
  GPUFEED_EXPECTS(size.has_value(),
                  "gpufeed::torch: the dataset has no size() (a stream dataset); gpufeed plans "
                  "epochs over indices and needs datasets that know their size");
  return *size;
}

}  // namespace detail

/// @brief A libtorch dataset behind gpufeed's `dataset` interface.
///
/// Like libtorch's own loader, each worker reads through its own copy of the dataset (copies of
/// tensors share their storage), so `get()` is never called concurrently on one object.
template <class TorchDataset>
class dataset_adapter final : public gpufeed::dataset {
 public:
  /// @param data the libtorch dataset; example 0 is read once here for the spec.
  /// @param workers how many worker copies to keep (the loader's `workers`).
  dataset_adapter(TorchDataset data, unsigned workers) : size_{detail::size_of(data)} {
    GPUFEED_EXPECTS(size_ > 0, "gpufeed::torch: the dataset is empty (size() == 0)");
    copies_.reserve(workers == 0 ? 1 : workers);
    for (unsigned w = 1; w < (workers == 0 ? 1U : workers); ++w) copies_.push_back(data);
    copies_.insert(copies_.begin(), std::move(data));
    spec_ = detail::spec_of(detail::example_at(copies_.front(), 0));
  }

  [[nodiscard]] std::size_t size() const override { return size_; }
  [[nodiscard]] sample_spec spec() const override { return spec_; }
  void read(std::size_t index, sample_view out, read_context const& ctx) const override {
    auto& data = copies_[ctx.worker % copies_.size()];
    detail::copy_example(detail::example_at(data, index), out, index);
  }

 private:
  std::size_t size_;
  mutable std::vector<TorchDataset> copies_;  // one per worker: get() is not const in libtorch
  sample_spec spec_;
};

}  // namespace gpufeed::torch
