#pragma once
/// @file
/// @brief libtorch samplers as the source of each epoch's order (internal to gpufeed::torch).
///
/// `make_data_loader(dataset, sampler, options)` keeps its own copy of the sampler and draws one
/// epoch from it as libtorch's loader does (`reset()`, then `next(batch_size)` until it runs out):
/// the loader then delivers exactly those batches (`loader_options::order = sample_order::given`).

#include <c10/util/Type.h>
#include <torch/torch.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpufeed/epoch_order.hpp"

namespace gpufeed::torch::detail {

/// What make_data_loader takes for a sampler: anything with libtorch's `reset()` and
/// `next(batch_size)` (whether it gives index batches is checked with a message afterwards).
template <class S>
concept sampler_like = requires(S& s, std::size_t n) {
  s.reset();
  s.next(n);
};

/// A sampler of dataset indices: `next(n)` gives an optional `std::vector<std::size_t>`.
template <class S>
concept index_sampler = sampler_like<S> && requires(S& s, std::size_t n) {
  { *s.next(n) } -> std::convertible_to<std::vector<std::size_t> const&>;
};

/// libtorch's samplers whose `reset()` reads nothing but their own state (not torch's global
/// generator): their next epoch can be drawn before the current one ends.
template <class S>
inline constexpr bool draws_ahead_v =
    std::is_same_v<S, ::torch::data::samplers::SequentialSampler> ||
    std::is_same_v<S, ::torch::data::samplers::DistributedSequentialSampler> ||
    std::is_same_v<S, ::torch::data::samplers::DistributedRandomSampler>;

/// One sampler, type-erased: the loader's source of each epoch's order.
class sampler_orders {
 public:
  virtual ~sampler_orders() = default;
  /// Resets the sampler (as libtorch's loader does when an epoch begins) and draws its epoch:
  /// batches of up to `batch_size` indices until it runs out, or, with `drop_last`, until it
  /// gives a short one (which is left out, as libtorch does).
  /// @throws logic_error for an empty batch or one larger than batch_size.
  [[nodiscard]] virtual epoch_order draw(std::size_t batch_size, bool drop_last) = 0;
  /// The sampler's `set_epoch(epoch)`, where it has one (the distributed samplers).
  virtual void set_epoch(std::uint64_t epoch) = 0;
  /// Whether it is a distributed sampler (has set_epoch): it gives this rank's share itself.
  [[nodiscard]] virtual bool distributed() const noexcept = 0;
  /// Whether draw() may run before the epoch begins (draws_ahead_v).
  [[nodiscard]] virtual bool draws_ahead() const noexcept = 0;
  /// The sampler's type, for the log.
  [[nodiscard]] virtual std::string const& name() const noexcept = 0;
};

/// Appends one batch of `sampler`'s to `out`. Returns false, appending nothing, when the batch
/// ends the epoch (short, with drop_last). @throws logic_error as sampler_orders::draw.
bool append_batch(epoch_order& out, std::vector<std::size_t> const& indices, std::size_t batch_size,
                  bool drop_last, std::string const& sampler);

template <class Sampler>
class sampler_orders_of final : public sampler_orders {
 public:
  explicit sampler_orders_of(Sampler sampler)
      : sampler_{std::move(sampler)}, name_{c10::demangle_type<Sampler>()} {}

  epoch_order draw(std::size_t batch_size, bool drop_last) override {
    sampler_.reset();
    epoch_order out;
    while (auto indices = sampler_.next(batch_size)) {
      if (!append_batch(out, *indices, batch_size, drop_last, name_)) break;
    }
    return out;
  }
  void set_epoch(std::uint64_t epoch) override {
    if constexpr (requires { sampler_.set_epoch(std::size_t{}); }) {
      sampler_.set_epoch(static_cast<std::size_t>(epoch));
    }
  }
  bool distributed() const noexcept override {
    return requires(Sampler & s) {
      s.set_epoch(std::size_t{});
    };
  }
  bool draws_ahead() const noexcept override { return draws_ahead_v<Sampler>; }
  std::string const& name() const noexcept override { return name_; }

 private:
  Sampler sampler_;
  std::string name_;
};

/// The loader's copy of `sampler`.
template <class Sampler>
std::unique_ptr<sampler_orders> orders_from(Sampler sampler) {
  static_assert(index_sampler<Sampler>,
                "gpufeed::torch: the sampler must give batches of dataset indices "
                "(next(batch_size) returning an optional std::vector<size_t>); a StreamSampler or "
                "a custom batch request has no index gpufeed could plan an epoch with");
  return std::make_unique<sampler_orders_of<Sampler>>(std::move(sampler));
}

}  // namespace gpufeed::torch::detail
