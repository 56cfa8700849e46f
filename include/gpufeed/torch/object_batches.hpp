#pragma once
/// @file
/// @brief The slow path: libtorch datasets whose batches gpufeed cannot copy into its ring.
///
/// Examples that are not libtorch's tensor examples (`int`, `std::string` targets, a struct of
/// the program's own) and batch transforms other than a final `Stack<>` (`Collate`,
/// `BatchLambda`, a `BatchTransform` of the program's own) are batched as libtorch batches them:
/// gpufeed's workers read each example (`get(i)` and the example transforms, one copy of the
/// dataset per worker), keep it aside and put a ticket for it in the ring; the training thread
/// collects a batch's examples into a `std::vector`, in batch order, and passes it through the
/// dataset's batch transforms, libtorch's own `apply_batch`. The loader yields what libtorch's
/// yields, `Dataset::BatchType`. The order, samplers, options and errors are the fast path's;
/// what is slower is the batch: objects moved one by one, and batch transforms on the training
/// thread.

#include <c10/util/Type.h>
#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpufeed/dataset.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/sample_spec.hpp"
#include "gpufeed/sample_view.hpp"
#include "gpufeed/torch/dataset_adapter.hpp"

namespace gpufeed::torch {

namespace detail {

/// The ring's layout on the slow path: one ticket (int64) per example.
[[nodiscard]] sample_spec ticket_spec();
/// Why a dataset takes the slow path, for the log: `example` is its example type, `tensors`
/// whether those are tensor examples (then its batch transforms are the reason).
[[nodiscard]] std::string slow_path_note(std::string const& example, bool tensors);

/// Examples read by the workers and not yet collected, by ticket. A ticket is also filed under
/// the place in the ring it was written to: when a worker writes there again, the batch that
/// held it is gone (consumed, or discarded by set_epoch), and so is its example.
template <class Example>
class example_store {
 public:
  /// Keeps `example`, written to the ring at `place`. Thread-safe.
  [[nodiscard]] std::int64_t put(std::byte const* place, Example example) {
    std::lock_guard const lock{mutex_};
    auto const ticket = next_++;
    if (auto [it, fresh] = places_.try_emplace(place, ticket); !fresh) {
      examples_.erase(it->second);
      it->second = ticket;
    }
    examples_.emplace(ticket, std::move(example));
    return ticket;
  }
  /// Hands the example of `ticket` over. @throws logic_error when it is not kept.
  [[nodiscard]] Example take(std::int64_t ticket) {
    std::lock_guard const lock{mutex_};
    auto it = examples_.find(ticket);
    GPUFEED_EXPECTS(it != examples_.end(), "gpufeed::torch: the example of ticket " +
                                               std::to_string(ticket) +
                                               " is not kept (taken twice, or overwritten)");
    auto out = std::move(it->second);
    examples_.erase(it);
    return out;
  }
  /// Examples kept (for tests: bounded by the ring's samples).
  [[nodiscard]] std::size_t kept() const {
    std::lock_guard const lock{mutex_};
    return examples_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::int64_t next_ = 0;
  std::unordered_map<std::int64_t, Example> examples_;
  std::unordered_map<std::byte const*, std::int64_t> places_;
};

/// `data`'s batch from the examples of its source: each transform between the two, innermost
/// first, applied with its own `apply_batch`.
template <class D>
typename D::BatchType apply_transforms(D& data, std::vector<source_example_t<D>>&& examples) {
  if constexpr (std::is_same_v<source_t<D>, D>) {
    return std::move(examples);
  } else {
    return transform_of(data).apply_batch(apply_transforms(source_of(data), std::move(examples)));
  }
}

}  // namespace detail

/// @brief The slow path's dataset side, by batch type: gpufeed's workers read through it, and
/// the loader turns each batch of tickets into a `Batch`.
template <class Batch>
class object_source : public gpufeed::dataset {
 public:
  /// @brief The batch of the examples of `tickets`, in order, through the dataset's batch
  /// transforms. Called by the consumer thread only. @throws what the transforms throw.
  [[nodiscard]] virtual Batch assemble(std::span<std::int64_t const> tickets) const = 0;
  /// @brief For the log: why this dataset is on the slow path.
  [[nodiscard]] virtual std::string note() const = 0;
};

/// @brief A libtorch dataset on the slow path (see the file comment).
template <class TorchDataset>
class object_adapter final : public object_source<typename TorchDataset::BatchType> {
 public:
  using batch_type = typename TorchDataset::BatchType;
  using example_type = detail::source_example_t<TorchDataset>;

  /// @param data the prototype of the workers' copies (moved from, where it can be); only
  /// `size()` is called here. @throws logic_error for a dataset without a size, or an empty one.
  explicit object_adapter(TorchDataset&& data)
      : size_{detail::size_of(data)}, copies_{std::move(data)} {}
  explicit object_adapter(TorchDataset const& data) : size_{detail::size_of(data)}, copies_{data} {}

  [[nodiscard]] std::size_t size() const override { return size_; }
  [[nodiscard]] sample_spec spec() const override { return detail::ticket_spec(); }
  void read(std::size_t index, sample_view out, read_context const& ctx) const override {
    auto& data = copies_.of(ctx.worker);
    auto example = detail::source_example(detail::source_in(data), index);
    auto const place = out.bytes(0);
    auto const ticket = store_.put(place.data(), std::move(example));
    std::memcpy(place.data(), &ticket, sizeof ticket);
  }

  [[nodiscard]] batch_type assemble(std::span<std::int64_t const> tickets) const override {
    std::vector<example_type> examples;
    examples.reserve(tickets.size());
    for (auto const t : tickets) examples.push_back(store_.take(t));
    if constexpr (std::is_same_v<detail::source_t<TorchDataset>, TorchDataset>) {
      return examples;
    } else {
      return detail::apply_transforms(copies_.consumer(), std::move(examples));
    }
  }
  [[nodiscard]] std::string note() const override {
    return detail::slow_path_note(c10::demangle_type<example_type>(),
                                  detail::tensor_example<example_type>);
  }
  /// @brief Examples read and not yet collected (bounded by the samples the ring holds).
  [[nodiscard]] std::size_t kept() const { return store_.kept(); }

 private:
  std::size_t size_;
  detail::worker_copies<TorchDataset> copies_;
  mutable detail::example_store<example_type> store_;
};

}  // namespace gpufeed::torch
