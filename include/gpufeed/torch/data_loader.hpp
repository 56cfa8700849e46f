#pragma once
/// @file
/// @brief `gpufeed::torch::make_data_loader`: the drop-in for `torch::data::make_data_loader`.
///
/// @code
/// // before:
/// auto loader = torch::data::make_data_loader(
///     dataset.map(torch::data::transforms::Stack<>()),
///     torch::data::DataLoaderOptions().batch_size(64).workers(4));
/// // after (the same dataset, the same options, the same loop):
/// auto loader = gpufeed::torch::make_data_loader(
///     dataset.map(torch::data::transforms::Stack<>()),
///     torch::data::DataLoaderOptions().batch_size(64).workers(4));
/// for (auto& batch : *loader) {
///   auto loss = torch::nll_loss(model->forward(batch.data), batch.target);
/// }
/// @endcode
///
/// gpufeed's own knobs (prefetch depth, gradient accumulation, seed, GPU placement) are set on
/// `gpufeed::torch::data_loader_options`, which also takes libtorch's option names.

#include <torch/torch.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "gpufeed/dataset.hpp"
#include "gpufeed/detail/epoch_iterator.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/options.hpp"
#include "gpufeed/torch/dataset_adapter.hpp"
#include "gpufeed/torch/tensors.hpp"

namespace gpufeed::torch {

/// @brief libtorch's loader options by libtorch's names, and gpufeed's by gpufeed's.
///
/// Setters chain like `torch::data::DataLoaderOptions` (`.batch_size(64).workers(4)`); each
/// name without an argument reads the value. Anything else is on `loader()`.
class data_loader_options {
 public:
  /// @brief batch_size 1, 1 worker, in order, no shuffle decision yet (the sampler decides).
  explicit data_loader_options(std::size_t batch_size = 1);
  /// @brief Takes libtorch's options: batch_size, workers, drop_last, timeout, enforce_ordering.
  /// Implicit on purpose, so that code passing `torch::data::DataLoaderOptions` compiles as is.
  data_loader_options(::torch::data::DataLoaderOptions const& options);  // NOLINT

  // libtorch's names.
  data_loader_options& batch_size(std::size_t value);
  [[nodiscard]] std::size_t batch_size() const noexcept { return options_.batch_size; }
  /// @brief Worker threads. libtorch's 0 (load in the calling thread) becomes 1 worker: gpufeed
  /// always prepares batches ahead of the training step. `gpufeed::auto_workers` (or anything
  /// above the largest `unsigned`) lets the loader choose.
  data_loader_options& workers(std::size_t value);
  [[nodiscard]] std::size_t workers() const noexcept { return options_.workers; }
  /// @brief Drop a last batch with fewer than batch_size samples.
  data_loader_options& drop_last(bool value);
  [[nodiscard]] bool drop_last() const noexcept;
  /// @brief Accepted for compatibility: gpufeed always delivers batches in sampler order, so
  /// `false` changes nothing (no batch ever overtakes another).
  data_loader_options& enforce_ordering(bool value);
  [[nodiscard]] bool enforce_ordering() const noexcept { return true; }
  /// @brief Longest wait for one batch before `timeout_error`; unset waits forever.
  data_loader_options& timeout(std::optional<std::chrono::milliseconds> value);
  [[nodiscard]] std::optional<std::chrono::milliseconds> timeout() const noexcept;

  // gpufeed's names.
  /// @brief Batches prepared ahead of the training step (slots in the ring).
  data_loader_options& prefetch_depth(std::size_t value);
  /// @brief Micro-batches per optimizer step; `tensor_batch::step` says where each one is.
  data_loader_options& accumulation_steps(std::size_t value);
  /// @brief Shuffle and augmentation seed: the same seed gives the same order in every run.
  data_loader_options& seed(std::uint64_t value);
  /// @brief Shuffle (true) or dataset order (false). Unset: the sampler decides
  /// (RandomSampler shuffles, SequentialSampler does not), as in libtorch.
  data_loader_options& shuffle(bool value);
  [[nodiscard]] std::optional<bool> shuffle() const noexcept { return shuffle_; }
  /// @brief Put batches on this CUDA device (needs gpufeed::torch built with CUDA). Tensors are
  /// then device tensors, and each `next()` makes torch's current stream wait for the copy.
  /// Written for torch 2.x with CUDA; compiled only against CPU libtorch, not yet run on a GPU.
  data_loader_options& device(int cuda_device);
  /// @brief What a failing `get()` does: raise (default) or skip and count.
  data_loader_options& on_error(error_policy value);

  /// @brief Every gpufeed option (rank, world size, transforms, staging, pinned budget, ...).
  [[nodiscard]] loader_options& loader() noexcept { return options_; }
  [[nodiscard]] loader_options const& loader() const noexcept { return options_; }

 private:
  loader_options options_;
  std::optional<bool> shuffle_;
};

/// @brief An iterable gpufeed loader whose batches are `tensor_batch`es.
///
/// `begin()` starts an epoch, as libtorch's does: the next one after the last that was started
/// (an epoch left half-way is abandoned). Not thread-safe: iterate from one thread.
class data_loader {
 public:
  /// @throws logic_error for bad options (the message names the option).
  data_loader(std::shared_ptr<gpufeed::dataset const> dataset, data_loader_options const& options);

  /// @brief The next batch of the epoch, or nullopt at its end (the following call starts the
  /// next epoch). On the CUDA path torch's current stream waits for the batch's copy.
  /// Blocks until the batch is ready, the timeout passes (timeout_error) or a read fails
  /// (sample_error).
  [[nodiscard]] std::optional<tensor_batch> next();

  /// @brief Input iterator over one epoch; owns the current batch until it advances.
  using iterator = gpufeed::detail::epoch_iterator<data_loader, tensor_batch>;

  /// @brief Starts an epoch (see the class comment).
  iterator begin();
  std::default_sentinel_t end() noexcept { return {}; }

  /// @brief The gpufeed loader underneath: stats, state/restore, set_epoch.
  [[nodiscard]] gpufeed::loader& loader() noexcept { return loader_; }

 private:
  gpufeed::loader loader_;
};

namespace detail {
/// gpufeed options for a loader built through `make_data_loader` with sampler `Sampler`.
template <class Sampler>
data_loader_options with_sampler(data_loader_options options) {
  if (!options.shuffle().has_value()) {
    options.shuffle(!std::is_same_v<Sampler, ::torch::data::samplers::SequentialSampler>);
  }
  return options;
}
}  // namespace detail

/// @brief A gpufeed loader over a libtorch dataset, with libtorch's argument order.
/// `Sampler` is read for its order only: RandomSampler (the default, as in libtorch) shuffles
/// with the options' seed, SequentialSampler keeps dataset order.
/// @throws logic_error for bad options, or when example 0 cannot be batched.
template <class Sampler = ::torch::data::samplers::RandomSampler, class Dataset>
requires(!std::is_convertible_v<Dataset, std::shared_ptr<gpufeed::dataset const>>)
    std::unique_ptr<data_loader> make_data_loader(Dataset dataset, data_loader_options options) {
  options = detail::with_sampler<Sampler>(std::move(options));
  auto adapted = std::make_shared<dataset_adapter<Dataset>>(std::move(dataset));
  return std::make_unique<data_loader>(std::move(adapted), std::move(options));
}

/// @brief As above with only a batch size.
template <class Sampler = ::torch::data::samplers::RandomSampler, class Dataset>
requires(!std::is_convertible_v<Dataset, std::shared_ptr<gpufeed::dataset const>>)
    std::unique_ptr<data_loader> make_data_loader(Dataset dataset, std::size_t batch_size) {
  return make_data_loader<Sampler>(std::move(dataset), data_loader_options{batch_size});
}

/// @brief A loader over one of gpufeed's own datasets (image_folder, hdf5, in_memory, ...):
/// `data` is its first field and `target` its second.
template <class Sampler = ::torch::data::samplers::RandomSampler>
std::unique_ptr<data_loader> make_data_loader(std::shared_ptr<gpufeed::dataset const> dataset,
                                              data_loader_options options) {
  return std::make_unique<data_loader>(std::move(dataset),
                                       detail::with_sampler<Sampler>(std::move(options)));
}

}  // namespace gpufeed::torch
