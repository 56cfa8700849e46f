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
/// Every form of libtorch's `make_data_loader` is here: a sampler type
/// (`make_data_loader<SequentialSampler>(dataset, options)`), a sampler instance
/// (`make_data_loader(dataset, DistributedRandomSampler(size, world, rank), options)`), options
/// or a batch size, or neither. Each yields what libtorch's loader yields for the dataset: a
/// dataset of tensor examples mapped through `Stack<>` stacked batches (`tensor_batch`, a
/// `torch::data::Example<>`), one that is not `std::vector<Example>`, and any other dataset
/// (examples that are not tensors, other batch transforms) its own `BatchType`, put together by
/// libtorch's transforms on the slow path (object_batches.hpp). `begin()` and `end()` are
/// libtorch's iterators (loader_iterator.hpp). gpufeed's own knobs (prefetch depth, gradient
/// accumulation, seed, GPU placement) are on `gpufeed::torch::data_loader_options`, which also
/// takes libtorch's option names. docs/torch.md has the whole migration table.

#include <torch/torch.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpufeed/dataset.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/log.hpp"
#include "gpufeed/options.hpp"
#include "gpufeed/torch/dataset_adapter.hpp"
#include "gpufeed/torch/loader_iterator.hpp"
#include "gpufeed/torch/object_batches.hpp"
#include "gpufeed/torch/sampler_orders.hpp"
#include "gpufeed/torch/tensors.hpp"
#include "gpufeed/torch/worker_exception.hpp"

namespace gpufeed::torch {

/// @brief libtorch's loader options by libtorch's names, and gpufeed's by gpufeed's.
///
/// Setters chain like `torch::data::DataLoaderOptions` (`.batch_size(64).workers(4)`); most names
/// without an argument read the value. Anything else is on `loader()`.
class data_loader_options {
 public:
  /// @brief batch_size (1 by default), 1 worker, no shuffle decision yet (the sampler decides).
  /// Implicit, as `torch::data::DataLoaderOptions(batch_size)` is, so that
  /// `make_data_loader(dataset, 64)` compiles as with libtorch.
  data_loader_options(std::size_t batch_size = 1);  // NOLINT(google-explicit-constructor)
  /// @brief Takes libtorch's options: batch_size, workers, max_jobs, timeout, enforce_ordering,
  /// drop_last. What gpufeed does differently (workers 0, enforce_ordering false) is said once
  /// in the log when the loader is made. Implicit on purpose, so that code passing
  /// `torch::data::DataLoaderOptions` compiles as is.
  data_loader_options(::torch::data::DataLoaderOptions const& options);  // NOLINT

  // libtorch's names.
  data_loader_options& batch_size(std::size_t value);
  [[nodiscard]] std::size_t batch_size() const noexcept { return options_.batch_size; }
  /// @brief Worker threads. libtorch's 0 (load in the calling thread) becomes 1 worker: gpufeed
  /// always prepares batches ahead of the training step. `gpufeed::auto_workers` (or anything
  /// above the largest `unsigned`) lets the loader choose. As in libtorch, with 0 (the default)
  /// a `begin()` while an iterator of the epoch is still under way starts over, and with more
  /// it throws (see `data_loader::begin`).
  data_loader_options& workers(std::size_t value);
  [[nodiscard]] std::size_t workers() const noexcept { return options_.workers; }
  /// @brief libtorch's bound on batches in flight: gpufeed's `prefetch_depth` (the same).
  data_loader_options& max_jobs(std::size_t value);
  /// @brief Drop a last batch with fewer than batch_size samples.
  data_loader_options& drop_last(bool value);
  [[nodiscard]] bool drop_last() const noexcept;
  /// @brief Accepted for compatibility: gpufeed always delivers batches in sampler order, so
  /// `false` changes nothing (no batch ever overtakes another; a slow sample holds back only
  /// its own batch, while the workers go on with the next ones). Said once in the log.
  data_loader_options& enforce_ordering(bool value);
  [[nodiscard]] bool enforce_ordering() const noexcept { return true; }
  /// @brief Longest wait for one batch before `timeout_error`; unset waits forever.
  data_loader_options& timeout(std::optional<std::chrono::milliseconds> value);
  [[nodiscard]] std::optional<std::chrono::milliseconds> timeout() const noexcept;

  // gpufeed's names.
  /// @brief Batches prepared ahead of the training step (slots in the ring).
  data_loader_options& prefetch_depth(std::size_t value);
  [[nodiscard]] std::size_t prefetch_depth() const noexcept { return options_.prefetch_depth; }
  /// @brief Most bytes the ring may grow to when the training loop holds batches (a running
  /// `total_loss += loss` keeps each step's inputs): see `loader_options::held_batches_budget`.
  /// 0 keeps the ring at prefetch_depth slots.
  data_loader_options& held_batches_budget(std::size_t bytes);
  /// @brief Micro-batches per optimizer step; `tensor_batch::step` says where each one is.
  data_loader_options& accumulation_steps(std::size_t value);
  /// @brief Shuffle and augmentation seed: the same seed gives the same order in every run.
  /// Unset: torch's seed (`torch::manual_seed`) as the loader is made, on a single process;
  /// 0 on several ranks (see docs/torch.md, "Order and seed").
  data_loader_options& seed(std::uint64_t value);
  /// @brief Shuffle (true) or dataset order (false). Unset: the sampler decides
  /// (RandomSampler shuffles, SequentialSampler does not), as in libtorch.
  data_loader_options& shuffle(bool value);
  [[nodiscard]] std::optional<bool> shuffle() const noexcept { return shuffle_; }
  /// @brief Put batches on this CUDA device (needs gpufeed::torch built with CUDA). Tensors are
  /// then device tensors, and torch's current stream at each `next()` waits for the copy (see
  /// `tensor_batch::use_on` for other streams). Written for torch 2.x with CUDA; compiled only
  /// against CPU libtorch, not yet run on a GPU.
  data_loader_options& device(int cuda_device);
  /// @brief What a failing `get()` does: raise (default) or skip and count.
  data_loader_options& on_error(error_policy value);

  /// @brief Every gpufeed option (rank, world size, transforms, staging, pinned budget, ...).
  [[nodiscard]] loader_options& loader() noexcept { return options_; }
  [[nodiscard]] loader_options const& loader() const noexcept { return options_; }

 private:
  friend class data_loader;
  loader_options options_;
  std::optional<bool> shuffle_;
  std::optional<std::uint64_t> seed_;
  // What libtorch's options became where gpufeed differs: logged once, by the loader.
  std::vector<std::string> notes_;
  // libtorch's workers(0), the default: begin() may start over while an iteration is under way.
  bool begin_starts_over_ = true;
};

template <class Example>
class example_data_loader;
template <class Batch>
class object_data_loader;

/// @brief An iterable gpufeed loader whose batches are `tensor_batch`es.
///
/// `begin()` starts an epoch, as libtorch's does: the next one after the last that was started
/// (an epoch left half-way is abandoned). Not thread-safe: iterate from one thread.
class data_loader {
 public:
  /// @brief A loader in gpufeed's own order: shuffled (`shuffle(true)`, with the seed) or not.
  /// @throws logic_error for bad options (the message names the option).
  data_loader(std::shared_ptr<gpufeed::dataset const> dataset, data_loader_options const& options);
  /// @brief A loader whose every epoch is drawn from `sampler` (a libtorch sampler, see
  /// `make_data_loader(dataset, sampler, options)`), batch by batch as libtorch's loader draws
  /// it. @throws logic_error for bad options, or when the sampler gives an index that is not
  /// below the dataset's size.
  data_loader(std::shared_ptr<gpufeed::dataset const> dataset, data_loader_options const& options,
              std::unique_ptr<detail::sampler_orders> sampler);
  data_loader(data_loader&&) noexcept;
  data_loader& operator=(data_loader&&) noexcept;
  data_loader(data_loader const&) = delete;
  data_loader& operator=(data_loader const&) = delete;
  ~data_loader();

  /// @brief The next batch of the epoch, or nullopt at its end (the following call starts the
  /// next epoch). On the CUDA path torch's current stream (now) waits for the batch's copy.
  /// Blocks until the batch is ready, the timeout passes (timeout_error) or a read fails
  /// (worker_exception, a torch::data::WorkerException). @throws logic_error after join().
  [[nodiscard]] std::optional<tensor_batch> next();

  /// @brief Input iterator over one epoch (loader_iterator.hpp); owns the current batch until it
  /// advances.
  using iterator = loader_iterator<data_loader, tensor_batch>;

  /// @brief Starts an epoch: the current one if nothing of it was delivered yet, else the next
  /// (an epoch left half-way is abandoned). The first batch is asked for when the iterator is
  /// first used. @throws logic_error while an iterator of the last `begin()` is still alive and
  /// short of its end, when the options asked for worker threads (libtorch refuses this too);
  /// with libtorch's `workers(0)` (the default) it starts over instead, as libtorch's does.
  /// @throws logic_error after join().
  iterator begin();
  /// @brief The end of every epoch: an iterator that holds no batch.
  iterator end() noexcept { return {}; }

  /// @brief Positions the loader at the start of `epoch`; with a distributed sampler, calls its
  /// `set_epoch(epoch)` first, so that the epoch is drawn with it (libtorch's programs cannot
  /// reach the sampler inside a loader; this is how to reshuffle each epoch).
  void set_epoch(std::uint64_t epoch);

  /// @brief The options in force, in libtorch's terms: `max_jobs` is the prefetch depth,
  /// `workers` the worker threads, `enforce_ordering` always true.
  [[nodiscard]] ::torch::data::FullDataLoaderOptions const& options() const noexcept {
    return full_options_;
  }
  /// @brief Stops and joins the worker threads, as libtorch's `join()`. Batches still alive stay
  /// valid. Idempotent; afterwards only `options()` may be called (the rest throws
  /// logic_error).
  void join();

  /// @brief The gpufeed loader underneath: stats, state/restore, batches_per_epoch.
  /// @throws logic_error after join().
  [[nodiscard]] gpufeed::loader& loader();

 private:
  template <class Example>
  friend class example_data_loader;
  template <class Batch>
  friend class object_data_loader;

  // begin() for an iterator over `owner`'s batches (this loader's, or a wrapper's).
  template <class Owner, class Batch>
  loader_iterator<Owner, Batch> iterate(Owner* owner) {
    begin_epoch();
    auto it = loader_iterator<Owner, Batch>::started(owner);
    iteration_ = it.progress();
    return it;
  }
  // begin()'s rule for an iteration under way, then start_epoch().
  void begin_epoch();
  // begin()'s positioning: an epoch left half-way is abandoned for the next one.
  void start_epoch();
  // Gives `epoch`'s order, drawn from the sampler.
  void give_order(std::uint64_t epoch);
  [[nodiscard]] gpufeed::loader& running();

  std::optional<gpufeed::loader> loader_;
  std::unique_ptr<detail::sampler_orders> sampler_;  // null: gpufeed's own order
  std::optional<std::uint64_t> given_epoch_;         // the epoch whose order was given last
  // The sampler epoch that order was drawn with (where set_epoch set one).
  std::optional<std::uint64_t> given_sampler_epoch_;
  // set_epoch() was called: every later epoch is drawn with the sampler's set_epoch(epoch).
  bool follow_epochs_ = false;
  // The sampler's next epoch was given as its current one ends, so the core already stands
  // there: next() still owes the caller the end of the epoch.
  bool end_owed_ = false;
  std::size_t batch_size_;
  bool drop_last_;
  bool begin_starts_over_;
  // The iterators of the last begin(): whether they are still under way.
  std::weak_ptr<detail::iteration const> iteration_;
  ::torch::data::FullDataLoaderOptions full_options_;
};

namespace detail {
/// `batch`'s samples as libtorch examples: rows of its tensors (views sharing its lease).
template <class Example>
std::vector<Example> unstack(tensor_batch const& batch) {
  std::vector<Example> out;
  auto const samples = batch.data.defined() ? batch.data.size(0) : 0;
  out.reserve(static_cast<std::size_t>(samples));
  for (std::int64_t i = 0; i < samples; ++i) {
    if constexpr (requires(Example & e) { e.target; }) {
      out.emplace_back(batch.data[i], batch.target[i]);
    } else {
      out.emplace_back(batch.data[i]);
    }
  }
  return out;
}
}  // namespace detail

/// @brief The loader of a dataset that is not mapped through `Stack<>`: each batch is a
/// `std::vector<Example>`, as libtorch's loader yields. Each example's tensors are views of the
/// batch's slot (rows of one stacked batch), with the same lease as `tensor_batch`'s tensors:
/// the slot goes back when the last of them is gone. Every example must still have the shapes and
/// dtypes of the first one read.
template <class Example>
class example_data_loader {
 public:
  explicit example_data_loader(data_loader stacked) : stacked_{std::move(stacked)} {}

  /// @brief As data_loader::next(), the batch as its examples.
  [[nodiscard]] std::optional<std::vector<Example>> next() {
    auto batch = stacked_.next();
    if (!batch) return std::nullopt;
    return detail::unstack<Example>(*batch);
  }
  using iterator = loader_iterator<example_data_loader, std::vector<Example>>;
  /// @brief Starts an epoch, as data_loader::begin().
  iterator begin() { return stacked_.iterate<example_data_loader, std::vector<Example>>(this); }
  iterator end() noexcept { return {}; }

  /// @brief The stacked loader underneath: set_epoch, options, join, loader.
  [[nodiscard]] data_loader& stacked() noexcept { return stacked_; }
  void set_epoch(std::uint64_t epoch) { stacked_.set_epoch(epoch); }
  [[nodiscard]] ::torch::data::FullDataLoaderOptions const& options() const noexcept {
    return stacked_.options();
  }
  void join() { stacked_.join(); }
  [[nodiscard]] gpufeed::loader& loader() { return stacked_.loader(); }

 private:
  data_loader stacked_;
};

/// @brief The loader of a dataset on the slow path (object_batches.hpp): each batch is
/// `Batch`, the dataset's `BatchType`, as libtorch's loader yields: its examples as read by the
/// workers, collected in batch order and passed through the dataset's batch transforms on the
/// thread that calls `next()`. Order, options and errors are those of `data_loader`.
template <class Batch>
class object_data_loader {
 public:
  /// @param tickets the loader over `source`'s tickets. Says in the log that this is the slow
  /// path, and why.
  object_data_loader(data_loader tickets, std::shared_ptr<object_source<Batch> const> source)
      : tickets_{std::move(tickets)}, source_{std::move(source)} {
    log_message(log_level::info, source_->note());
  }

  /// @brief As data_loader::next(), the batch put together by libtorch's transforms. Blocks as
  /// `data_loader::next()`, then runs the batch transforms. @throws as `data_loader::next()`,
  /// and what a batch transform throws (that batch is lost; the next call goes on with the
  /// following one).
  [[nodiscard]] std::optional<Batch> next() {
    auto batch = tickets_.next();
    if (!batch) return std::nullopt;
    auto const column = batch->data.contiguous();
    std::vector<std::int64_t> const tickets(column.data_ptr<std::int64_t>(),
                                            column.data_ptr<std::int64_t>() + column.numel());
    batch.reset();  // the slot goes back before the batch transforms run
    return source_->assemble(tickets);
  }
  using iterator = loader_iterator<object_data_loader, Batch>;
  /// @brief Starts an epoch, as data_loader::begin().
  iterator begin() { return tickets_.iterate<object_data_loader, Batch>(this); }
  iterator end() noexcept { return {}; }

  void set_epoch(std::uint64_t epoch) { tickets_.set_epoch(epoch); }
  [[nodiscard]] ::torch::data::FullDataLoaderOptions const& options() const noexcept {
    return tickets_.options();
  }
  void join() { tickets_.join(); }
  [[nodiscard]] gpufeed::loader& loader() { return tickets_.loader(); }

 private:
  data_loader tickets_;
  std::shared_ptr<object_source<Batch> const> source_;
};

namespace detail {

/// @throws logic_error when `options` put batches on a GPU: the slow path's batches are the
/// program's own objects, which gpufeed cannot copy.
void refuse_device_for_objects(data_loader_options const& options, std::string const& example);

/// gpufeed options for a loader made with sampler type `Sampler` in gpufeed's own order.
template <class Sampler>
data_loader_options with_sampler(data_loader_options options) {
  if (!options.shuffle().has_value()) {
    options.shuffle(!std::is_same_v<Sampler, ::torch::data::samplers::SequentialSampler>);
  }
  return options;
}

/// Whether a sampler type is read for its order only (gpufeed's seeded shuffle or dataset
/// order); any other type is made from the dataset's size, as libtorch does, and drawn from.
template <class Sampler>
inline constexpr bool builtin_order_v =
    std::is_same_v<Sampler, ::torch::data::samplers::RandomSampler> ||
    std::is_same_v<Sampler, ::torch::data::samplers::SequentialSampler>;

template <class Sampler>
data_loader loader_of_type(std::shared_ptr<gpufeed::dataset const> data,
                           data_loader_options options) {
  if constexpr (builtin_order_v<Sampler>) {
    return data_loader{std::move(data), with_sampler<Sampler>(std::move(options))};
  } else {
    static_assert(std::is_constructible_v<Sampler, std::size_t>,
                  "gpufeed::torch: make_data_loader<Sampler>(dataset, options) makes the sampler "
                  "from the dataset's size, as libtorch's does; this sampler cannot be made so: "
                  "pass an instance, make_data_loader(dataset, sampler, options)");
    auto sampler = orders_from(Sampler(data->size()));
    return data_loader{std::move(data), options, std::move(sampler)};
  }
}

/// The loader libtorch programs get for `dataset`, its loader made by `make(data, options)`:
/// stacked batches for tensor examples mapped through Stack<>, vectors of them for tensor
/// examples that are not, and anything else on the slow path, as libtorch's batches.
template <class Dataset, class MakeLoader>
auto made_for(Dataset&& dataset, data_loader_options const& options, MakeLoader make) {
  if constexpr (fast_path<Dataset>) {
    auto loader = make(
        std::shared_ptr<gpufeed::dataset const>{
            std::make_shared<dataset_adapter<Dataset> const>(std::move(dataset))},
        options);
    if constexpr (is_stack_map<Dataset>::value) {
      return std::make_unique<data_loader>(std::move(loader));
    } else {
      return std::make_unique<example_data_loader<example_type_t<Dataset>>>(std::move(loader));
    }
  } else {
    refuse_device_for_objects(options, c10::demangle_type<source_example_t<Dataset>>());
    using batch = typename Dataset::BatchType;
    auto source = std::make_shared<object_adapter<Dataset> const>(std::move(dataset));
    auto loader = make(std::shared_ptr<gpufeed::dataset const>{source}, options);
    return std::make_unique<object_data_loader<batch>>(
        std::move(loader), std::shared_ptr<object_source<batch> const>{std::move(source)});
  }
}

template <class Dataset>
concept libtorch_dataset = !std::is_convertible_v<Dataset, std::shared_ptr<gpufeed::dataset const>>;

}  // namespace detail

/// @brief A gpufeed loader over a libtorch dataset, with libtorch's arguments. `Sampler` is read
/// for its order: RandomSampler (the default, as in libtorch) shuffles with the seed
/// (`seed()`, else torch's), SequentialSampler keeps dataset order; any other sampler type is
/// made from the dataset's size and drawn from each epoch, as libtorch does. Nothing is read
/// from the dataset here: the workers start at once, and the batch layout comes from the first
/// example one of them reads.
/// @return a `data_loader` for tensor examples mapped through `Stack<>`, an
/// `example_data_loader` for tensor examples that are not, else an `object_data_loader` of the
/// dataset's `BatchType` (the slow path); each yields what libtorch's loader yields.
/// @throws logic_error for bad options, or a dataset without a size. Stateful, chunk and
/// stream datasets do not compile (the first error says why).
template <class Sampler = ::torch::data::samplers::RandomSampler, detail::libtorch_dataset Dataset>
auto make_data_loader(Dataset dataset, data_loader_options options = {}) {
  if constexpr (detail::check_supported<Dataset>()) {
    return detail::made_for<Dataset>(
        std::move(dataset), options,
        [](std::shared_ptr<gpufeed::dataset const> data, data_loader_options const& o) {
          return detail::loader_of_type<Sampler>(std::move(data), o);
        });
  }
}

/// @brief As above, with a sampler instance, as libtorch's `make_data_loader(dataset, sampler,
/// options)`: the loader keeps its own copy and draws each epoch from it as libtorch's does
/// (`reset()`, then `next(batch_size)` until it runs out), so the batches are exactly the
/// sampler's. A distributed sampler's rank, world size and epoch are its own
/// (`loader->set_epoch(e)` calls its `set_epoch`); RANK and WORLD_SIZE are then not read.
template <detail::libtorch_dataset Dataset, detail::sampler_like Sampler>
auto make_data_loader(Dataset dataset, Sampler sampler, data_loader_options options = {}) {
  if constexpr (detail::check_supported<Dataset>()) {
    return detail::made_for<Dataset>(
        std::move(dataset), options,
        [&sampler](std::shared_ptr<gpufeed::dataset const> data, data_loader_options const& o) {
          return data_loader{std::move(data), o, detail::orders_from(std::move(sampler))};
        });
  }
}

/// @brief A loader over one of gpufeed's own datasets (image_folder, hdf5, in_memory, ...):
/// `data` is its first field and `target` its second. `Sampler` as above.
template <class Sampler = ::torch::data::samplers::RandomSampler>
std::unique_ptr<data_loader> make_data_loader(std::shared_ptr<gpufeed::dataset const> dataset,
                                              data_loader_options options = {}) {
  return std::make_unique<data_loader>(
      detail::loader_of_type<Sampler>(std::move(dataset), std::move(options)));
}

/// @brief A loader over one of gpufeed's own datasets in the order of a sampler instance.
template <detail::sampler_like Sampler>
std::unique_ptr<data_loader> make_data_loader(std::shared_ptr<gpufeed::dataset const> dataset,
                                              Sampler sampler, data_loader_options options = {}) {
  return std::make_unique<data_loader>(std::move(dataset), options,
                                       detail::orders_from(std::move(sampler)));
}

}  // namespace gpufeed::torch
