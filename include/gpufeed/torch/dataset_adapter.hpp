#pragma once
/// @file
/// @brief Any libtorch dataset as a gpufeed dataset.
///
/// A `torch::data::datasets::Dataset<Self, Example<>>` (with `get(i)` and `size()`), the same
/// mapped with example transforms (`.map(Normalize<>(...))`), and either mapped with `Stack<>`
/// (the stacking is gpufeed's: each example's tensors are copied once into the batch's slot).
/// Every example must have the shapes and dtypes of example 0.

#include <torch/torch.h>

#include <array>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpufeed/dataset.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/sample_spec.hpp"
#include "gpufeed/sample_view.hpp"

namespace gpufeed::torch {

namespace detail {

/// Worker ids a loader hands out: `loader_options::workers` and `autotune_options::max_workers`
/// are at most 1024, so `read_context::worker` is below it.
inline constexpr std::size_t max_workers = 1024;

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

/// Whether `T` is an example-level transform (`Normalize<>`, `Lambda<>`, any
/// `Transform<In, Out>`): `apply` maps one example to one example.
template <class T, class = void>
struct is_example_transform : std::false_type {};
template <class T>
struct is_example_transform<T, std::void_t<typename T::InputType, typename T::OutputType>>
    : std::is_base_of<
          ::torch::data::transforms::Transform<typename T::InputType, typename T::OutputType>, T> {
};

/// Whether example `i` of a `D` can be had on its own, without `get_batch` (which allocates a
/// vector per example and per MapDataset layer): `D` has `get(i)`, or is a MapDataset applying
/// an example transform to such a dataset. `type` is that example's type.
template <class D, class = void>
struct direct_example : std::false_type {};
template <class D>
struct direct_example<D, std::void_t<decltype(std::declval<D&>().get(std::size_t{}))>>
    : std::true_type {
  using type = decltype(std::declval<D&>().get(std::size_t{}));
};
template <class Source, class Transform,
          bool = (is_example_transform<Transform>::value && direct_example<Source>::value)>
struct direct_map_example : std::false_type {};
template <class Source, class Transform>
struct direct_map_example<Source, Transform, true>
    : std::is_convertible<typename direct_example<Source>::type, typename Transform::InputType> {
  using type = typename Transform::OutputType;
};
template <class Source, class Transform>
struct direct_example<::torch::data::datasets::MapDataset<Source, Transform>>
    : direct_map_example<Source, Transform> {};

// MapDataset::dataset() and transform() are const only; get() and apply() are not. The
// MapDataset is this worker's own non-const copy, so casting the const away is sound.
template <class Source, class Transform>
Source& source_of(::torch::data::datasets::MapDataset<Source, Transform>& data) {
  return const_cast<Source&>(data.dataset());
}

/// Example `index` of `data` as its own type: `get(index)`, then each example transform. Only
/// for datasets with `direct_example<Dataset>::value`.
template <class Dataset>
typename direct_example<Dataset>::type example_object(Dataset& data, std::size_t index) {
  if constexpr (requires { data.get(index); }) {
    return data.get(index);
  } else {
    using transform = typename Dataset::TransformType;
    return const_cast<transform&>(data.transform()).apply(example_object(source_of(data), index));
  }
}

/// Whether examples of type `E` are tensors gpufeed can batch: a tensor `data` and, if any, a
/// tensor `target` (`torch::data::Example<>`, `TensorExample`).
template <class E>
concept tensor_example = requires(E const& e) {
  { e.data } -> std::convertible_to<::torch::Tensor const&>;
}
&&(
    !requires(E const& e) { e.target; } ||
    requires(E const& e) {
      { e.target } -> std::convertible_to<::torch::Tensor const&>;
    });

template <class E>
example_tensors tensors_of(E const& example) {
  static_assert(tensor_example<E>,
                "gpufeed::torch: examples must hold tensors (a tensor .data and, if any, a tensor "
                ".target, as torch::data::Example<> and TensorExample do): gpufeed copies them "
                "into batches of tensors. Convert other values to tensors in get()");
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
    return example_at(source_of(data), index);
  } else if constexpr (direct_example<Dataset>::value) {
    return tensors_of(example_object(data, index));
  } else {
    // Anything else (a batch transform other than Stack, a custom BatchDataset): get_batch of
    // one index.
    auto batch = data.get_batch(::torch::ArrayRef<std::size_t>{index});
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
      return {one.data[0], one.target.defined() ? one.target[0] : ::torch::Tensor{}};
    }
  }
}

/// The element type of a `std::vector` (void for anything else).
template <class T>
struct vector_element {
  using type = void;
};
template <class E, class A>
struct vector_element<std::vector<E, A>> {
  using type = E;
};

/// Whether libtorch's loader yields `Dataset`'s batches as a `std::vector` of examples (a
/// dataset not mapped through Stack<> or another batch transform that gives one batch).
template <class Dataset>
concept yields_examples =
    !is_stack_map<Dataset>::value &&
    !std::is_void_v<typename vector_element<typename Dataset::BatchType>::type>;

/// The examples of a `Dataset` with `yields_examples`.
template <class Dataset>
using example_type_t = typename vector_element<typename Dataset::BatchType>::type;

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
/// tensors share their storage), so `get()` is never called concurrently on one object. A
/// worker's copy is made from the dataset given here on that worker's first read: a loader that
/// chooses its worker count (`gpufeed::auto_workers`) makes as many copies as threads read.
template <class TorchDataset>
class dataset_adapter final : public gpufeed::dataset {
  static_assert(!TorchDataset::is_stateful,
                "gpufeed::torch: stateful datasets (ChunkDataset, StatefulDataset) make their own "
                "batches; gpufeed plans epochs over indices, so it needs a Dataset with get(i) "
                "and size()");

 public:
  /// @param data the libtorch dataset, kept as the prototype the workers' copies are made from
  /// (it is only copied, never read through). Example 0 is read once here, through worker 0's
  /// copy, for the spec.
  explicit dataset_adapter(TorchDataset data)
      : size_{detail::size_of(data)}, prototype_{std::move(data)} {
    GPUFEED_EXPECTS(size_ > 0, "gpufeed::torch: the dataset is empty (size() == 0)");
    spec_ = detail::spec_of(detail::example_at(copy_for(0), 0));
  }
  dataset_adapter(dataset_adapter const&) = delete;
  dataset_adapter& operator=(dataset_adapter const&) = delete;
  ~dataset_adapter() override {
    for (auto& copy : copies_) delete copy.load(std::memory_order_acquire);
  }

  [[nodiscard]] std::size_t size() const override { return size_; }
  [[nodiscard]] sample_spec spec() const override { return spec_; }
  void read(std::size_t index, sample_view out, read_context const& ctx) const override {
    GPUFEED_EXPECTS(ctx.worker < detail::max_workers,
                    "gpufeed::torch: worker " + std::to_string(ctx.worker) +
                        " is beyond the loader's limit of " + std::to_string(detail::max_workers) +
                        " workers");
    detail::copy_example(detail::example_at(copy_for(ctx.worker), index), out, index);
  }

 private:
  // Worker `w`'s copy, made on its first read. Only worker `w` reads through it; the
  // compare-exchange only keeps a second copy from leaking should two threads ever race.
  TorchDataset& copy_for(unsigned worker) const {
    auto& slot = copies_[worker];
    if (auto* copy = slot.load(std::memory_order_acquire)) return *copy;
    auto fresh = std::make_unique<TorchDataset>(prototype_);
    TorchDataset* expected = nullptr;
    if (slot.compare_exchange_strong(expected, fresh.get(), std::memory_order_acq_rel)) {
      return *fresh.release();
    }
    return *expected;
  }

  std::size_t size_;
  TorchDataset const prototype_;
  // One per worker, made on first use: get() is not const in libtorch.
  mutable std::array<std::atomic<TorchDataset*>, detail::max_workers> copies_{};
  sample_spec spec_;
};

namespace detail {
/// `dataset` behind gpufeed's dataset interface.
template <class TorchDataset>
std::shared_ptr<gpufeed::dataset const> adapt(TorchDataset dataset) {
  return std::make_shared<dataset_adapter<TorchDataset>>(std::move(dataset));
}
}  // namespace detail

}  // namespace gpufeed::torch
