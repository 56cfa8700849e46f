#pragma once
/// @file
/// @brief Any libtorch dataset with `get(i)` (or `get_batch` of index batches) and `size()` as a
/// gpufeed dataset.
///
/// Tensor examples (`torch::data::Example<>`, `TensorExample`) take the fast path: each worker
/// calls `get(i)` (and the example transforms of `.map(...)`) and copies the example's tensors
/// straight into the batch's slot; `Stack<>` is that copy. Every example must then have the
/// shapes and dtypes of the first one read. The layout of a batch is learned from the first
/// example a worker reads: nothing is read on the thread that makes the loader.
///
/// Anything else (examples that are not tensors, or a batch transform other than a final
/// `Stack<>`) takes the slow path of object_batches.hpp. Stateful, chunk and stream datasets are
/// refused at compile time (`check_supported`).

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

#include "gpufeed/detail/adapted_dataset.hpp"
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

/// The spec ("data", "target") of `example`. @throws logic_error naming `index` for undefined
/// or complex-typed tensors.
[[nodiscard]] sample_spec spec_of(example_tensors const& example, std::size_t index);
/// Copies one example into `out`. @throws logic_error naming `index` when a shape or dtype
/// differs from the spec, or a tensor is not on the CPU.
void copy_example(example_tensors const& example, sample_view out, std::size_t index);

template <class T>
struct is_map_dataset : std::false_type {};
template <class Source, class Transform>
struct is_map_dataset<::torch::data::datasets::MapDataset<Source, Transform>> : std::true_type {};

template <class T>
struct is_shared_dataset : std::false_type {};
template <class Underlying>
struct is_shared_dataset<::torch::data::datasets::SharedBatchDataset<Underlying>> : std::true_type {
};

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
/// an example transform to such a dataset, or shares one (`make_shared_dataset`). `type` is that
/// example's type.
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
template <class Underlying>
struct direct_example<::torch::data::datasets::SharedBatchDataset<Underlying>>
    : direct_example<Underlying> {};

// MapDataset::dataset() and transform() are const only; get() and apply() are not. The
// MapDataset is this thread's own non-const copy, so casting the const away is sound.
template <class Source, class Transform>
Source& source_of(::torch::data::datasets::MapDataset<Source, Transform>& data) {
  return const_cast<Source&>(data.dataset());
}
template <class Source, class Transform>
Transform& transform_of(::torch::data::datasets::MapDataset<Source, Transform>& data) {
  return const_cast<Transform&>(data.transform());
}

/// Example `index` of `data` as its own type: `get(index)`, then each example transform. Only
/// for datasets with `direct_example<Dataset>::value`.
template <class Dataset>
typename direct_example<Dataset>::type example_object(Dataset& data, std::size_t index) {
  if constexpr (requires { data.get(index); }) {
    return data.get(index);
  } else if constexpr (is_shared_dataset<Dataset>::value) {
    return example_object(*data, index);  // the one object every copy shares, as in libtorch
  } else {
    return transform_of(data).apply(example_object(source_of(data), index));
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

/// Whether `D`'s batches are index batches (`get_batch(ArrayRef<size_t>)`), as a sampler of
/// indices gives them; false for stream datasets and custom batch requests.
template <class D>
inline constexpr bool takes_index_batches_v =
    std::is_same_v<typename D::BatchRequestType, ::torch::ArrayRef<std::size_t>>;

/// Where the examples of a `D` come from, one index at a time: `D` itself when its examples
/// can be had directly, or when it is a BatchDataset whose batches are vectors of examples (read
/// with `get_batch` of one index); else the source of its outermost transform, whose
/// `apply_batch` then runs on whole batches. `found` is false when no layer of `D` can give
/// one example (a BatchDataset of another batch type without `get`).
template <class D, class = void>
struct example_source {
  static constexpr bool found = false;
};
template <class D>
requires direct_example<D>::value struct example_source<D> {
  static constexpr bool found = true;
  using type = D;
  using example = typename direct_example<D>::type;
};
template <class D>
requires(!direct_example<D>::value && !is_map_dataset<D>::value && takes_index_batches_v<D> &&
         !std::is_void_v<
             typename vector_element<typename D::BatchType>::type>) struct example_source<D> {
  static constexpr bool found = true;
  using type = D;
  using example = typename vector_element<typename D::BatchType>::type;
};
template <class Source, class Transform>
requires(!direct_example<::torch::data::datasets::MapDataset<Source, Transform>>::
             value) struct example_source<::torch::data::datasets::MapDataset<Source, Transform>>
    : example_source<Source> {
};

template <class D>
using source_t = typename example_source<D>::type;
template <class D>
using source_example_t = typename example_source<D>::example;

/// The source of `data`'s examples inside it (`data` itself, or a MapDataset's source).
template <class D>
source_t<D>& source_in(D& data) {
  if constexpr (std::is_same_v<source_t<D>, D>) {
    return data;
  } else {
    return source_in(source_of(data));
  }
}

/// Example `index` of a dataset that is its own example source.
template <class Source>
auto source_example(Source& data, std::size_t index) {
  if constexpr (direct_example<Source>::value) {
    return example_object(data, index);
  } else {
    auto batch = data.get_batch(::torch::ArrayRef<std::size_t>{index});
    GPUFEED_EXPECTS(batch.size() == 1, "gpufeed::torch: get_batch of one index (" +
                                           std::to_string(index) + ") returned " +
                                           std::to_string(batch.size()) + " examples");
    return std::move(batch.front());
  }
}

/// Whether examples of type `E` are libtorch's tensor examples, which gpufeed copies into
/// batches: `torch::data::Example<>` and `TensorExample`. Anything else (other targets, user
/// types holding tensors among other things) is batched as libtorch does, on the slow path.
template <class E>
concept tensor_example =
    std::is_same_v<E, ::torch::data::Example<>> || std::is_same_v<E, ::torch::data::TensorExample>;

template <class E>
example_tensors tensors_of(E const& example) {
  if constexpr (requires { example.target; }) {
    return {example.data, example.target};
  } else {  // TensorExample: data only
    return {example.data, {}};
  }
}

/// Whether gpufeed copies `D`'s examples straight into its ring (the fast path): tensor
/// examples, read one index at a time, with nothing between them and the batch but a final
/// `Stack<>` (`D`'s batches are then stacked) or nothing (`D`'s batches are vectors of them).
template <class D>
concept fast_path = example_source<D>::found && tensor_example<source_example_t<D>> &&
    (std::is_same_v<source_t<D>, D> ||
     (is_stack_map<D>::value && std::is_same_v<source_t<D>, typename D::DatasetType>));

/// Whether libtorch's loader yields `Dataset`'s batches as a `std::vector` of examples.
template <class Dataset>
concept yields_examples =
    !is_stack_map<Dataset>::value &&
    !std::is_void_v<typename vector_element<typename Dataset::BatchType>::type>;

/// The examples of a `Dataset` with `yields_examples`.
template <class Dataset>
using example_type_t = typename vector_element<typename Dataset::BatchType>::type;

/// Refuses, as the first compiler error, the datasets gpufeed cannot plan epochs for; true for
/// the others (`if constexpr (check_supported<D>())` keeps the rest from being instantiated).
template <class D>
constexpr bool check_supported() {
  constexpr bool stateful = D::is_stateful;
  static_assert(
      !stateful,
      "gpufeed::torch: stateful datasets (StatefulDataset, ChunkDataset) decide their own "
      "batches and have no index a sampler could name; gpufeed plans each epoch over "
      "dataset indices: keep torch::data::make_data_loader for them, or give gpufeed a "
      "Dataset<Self, Example> with get(index) and size() (docs/torch.md, \"Datasets "
      "gpufeed refuses\")");
  constexpr bool index_batches = stateful || takes_index_batches_v<D>;
  static_assert(index_batches,
                "gpufeed::torch: this dataset's get_batch takes a batch size (a StreamDataset) or "
                "a custom batch request, not dataset indices; gpufeed plans each epoch over "
                "indices: keep torch::data::make_data_loader for it, or give gpufeed a "
                "Dataset<Self, Example> with get(index) and size()");
  constexpr bool splits = stateful || !index_batches || example_source<D>::found;
  static_assert(splits,
                "gpufeed::torch: this dataset has only get_batch(indices), and its batch type is "
                "not a std::vector of examples, so gpufeed's workers cannot read it one index at a "
                "time: give it get(index) (derive from torch::data::datasets::Dataset<Self, "
                "Example>), and let a batch transform (.map(...)) make its batch type");
  return !stateful && index_batches && splits;
}

template <class Dataset>
std::size_t size_of(Dataset const& data) {
  auto const size = data.size();
  // The message opens with libtorch's own sentence, which programs ported from it match on.
  GPUFEED_EXPECTS(size.has_value(),
                  "gpufeed::torch: Expected the dataset to be sized in order to construct the "
                  "Sampler, but its size() returned no size (an unsized or stream dataset); "
                  "gpufeed plans each epoch over the dataset's indices and needs to know how "
                  "many there are");
  GPUFEED_EXPECTS(*size > 0, "gpufeed::torch: the dataset is empty (size() == 0)");
  return *size;
}

/// One copy of a libtorch dataset per worker thread, made from a prototype on that worker's
/// first read, as libtorch's loader gives each worker its own: `get()` is not const in libtorch
/// and is never called concurrently on one object. One more copy serves the consumer thread.
template <class TorchDataset>
class worker_copies {
 public:
  explicit worker_copies(TorchDataset const& prototype) : prototype_{prototype} {}
  explicit worker_copies(TorchDataset&& prototype) : prototype_{std::move(prototype)} {}
  worker_copies(worker_copies const&) = delete;
  worker_copies& operator=(worker_copies const&) = delete;
  ~worker_copies() {
    for (auto& copy : copies_) delete copy.load(std::memory_order_acquire);
  }

  [[nodiscard]] TorchDataset const& prototype() const noexcept { return prototype_; }
  /// Worker `worker`'s copy. @throws logic_error for a worker id past the limit.
  TorchDataset& of(unsigned worker) const {
    GPUFEED_EXPECTS(worker < max_workers, "gpufeed::torch: worker " + std::to_string(worker) +
                                              " is beyond the loader's limit of " +
                                              std::to_string(max_workers) + " workers");
    return copy(worker);
  }
  /// The consumer thread's copy.
  TorchDataset& consumer() const { return copy(max_workers); }

 private:
  // Only one thread reads through each copy; the compare-exchange only keeps a second copy
  // from leaking should two threads ever race.
  TorchDataset& copy(std::size_t slot_index) const {
    auto& slot = copies_[slot_index];
    if (auto* copy = slot.load(std::memory_order_acquire)) return *copy;
    auto fresh = std::make_unique<TorchDataset>(prototype_);
    TorchDataset* expected = nullptr;
    if (slot.compare_exchange_strong(expected, fresh.get(), std::memory_order_acq_rel)) {
      return *fresh.release();
    }
    return *expected;
  }

  TorchDataset const prototype_;  // only copied, never read through
  mutable std::array<std::atomic<TorchDataset*>, max_workers + 1> copies_{};
};

/// An example read before the batch layout was known: its tensors wait for their slot.
class staged_tensors final : public gpufeed::detail::staged_sample {
 public:
  staged_tensors(example_tensors example, std::size_t index)
      : example_{std::move(example)}, index_{index}, spec_{spec_of(example_, index)} {}
  [[nodiscard]] sample_spec spec() const override { return spec_; }
  void write(sample_view out) override {
    copy_example(example_, out, index_);
    example_ = {};  // written once: the tensors go now rather than with the staged sample
  }

 private:
  example_tensors example_;
  std::size_t index_;
  sample_spec spec_;
};

}  // namespace detail

/// @brief A libtorch dataset of tensor examples behind gpufeed's `dataset` interface (the fast
/// path).
///
/// Each worker reads through its own copy of the dataset (copies of tensors share their
/// storage), made on that worker's first read, so `get()` is never called concurrently on one
/// object, and a loader that chooses its worker count makes as many copies as threads read. The
/// batch layout is the first example's that a worker reads (`layout_from_first_sample`).
template <class TorchDataset>
requires detail::fast_path<TorchDataset>
class dataset_adapter final : public gpufeed::detail::adapted_dataset {
 public:
  /// @param data the libtorch dataset, kept as the prototype the workers' copies are made from
  /// (moved from, where it can be: a dataset's copies may be costly). Nothing is read from it
  /// here: only `size()` is called. @throws logic_error for a dataset without a size, or an
  /// empty one.
  explicit dataset_adapter(TorchDataset&& data)
      : size_{detail::size_of(data)}, copies_{std::move(data)} {}
  explicit dataset_adapter(TorchDataset const& data)
      : size_{detail::size_of(data)}, copies_{data} {}

  [[nodiscard]] std::size_t size() const override { return size_; }
  /// @brief The layout learned from the first example read. @throws logic_error before then.
  [[nodiscard]] sample_spec spec() const override {
    auto const* learned = spec_.load(std::memory_order_acquire);
    GPUFEED_EXPECTS(learned != nullptr,
                    "gpufeed::torch: the batch layout is learned from the first example a worker "
                    "reads, and none has been read yet");
    return *learned;
  }
  [[nodiscard]] bool layout_from_first_sample() const override { return true; }
  [[nodiscard]] std::unique_ptr<gpufeed::detail::staged_sample> stage(
      std::size_t index, read_context const& ctx) const override {
    return std::make_unique<detail::staged_tensors>(tensors(index, ctx), index);
  }
  void layout_chosen(gpufeed::detail::staged_sample const& first) const override {
    chosen_ = std::make_unique<sample_spec const>(first.spec());
    spec_.store(chosen_.get(), std::memory_order_release);
  }
  void read(std::size_t index, sample_view out, read_context const& ctx) const override {
    detail::copy_example(tensors(index, ctx), out, index);
  }

 private:
  detail::example_tensors tensors(std::size_t index, read_context const& ctx) const {
    auto& data = copies_.of(ctx.worker);
    return detail::tensors_of(detail::source_example(detail::source_in(data), index));
  }

  std::size_t size_;
  detail::worker_copies<TorchDataset> copies_;
  // Set once, by layout_chosen, before any read or staged write; spec() may be asked from the
  // consumer thread meanwhile.
  mutable std::unique_ptr<sample_spec const> chosen_;
  mutable std::atomic<sample_spec const*> spec_{nullptr};
};

}  // namespace gpufeed::torch
