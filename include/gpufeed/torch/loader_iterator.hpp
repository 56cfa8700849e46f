#pragma once
/// @file
/// @brief The iterator of gpufeed::torch's loaders, with the semantics of libtorch's.
///
/// @code
/// auto loader = gpufeed::torch::make_data_loader(dataset, 32);
/// auto batches = std::distance(loader->begin(), loader->end());  // one epoch
/// std::vector<std::vector<int>> all;
/// std::copy(loader->begin(), loader->end(), std::back_inserter(all));  // the next one
/// @endcode
///
/// `begin()` and `end()` have one type, as in libtorch, so that every standard algorithm taking
/// an iterator pair works. An iterator from `begin()` asks the loader for its first batch only
/// when it is first dereferenced, compared or incremented; copies share that state (advancing
/// one advances them all, as libtorch's do). It equals `end()` once the loader said the epoch is
/// over; dereferencing or incrementing it then, or dereferencing or incrementing `end()` itself,
/// throws `gpufeed::logic_error` (libtorch throws too): it never reads past the epoch and never
/// starts the next one on its own.

#include <cstddef>
#include <iterator>
#include <memory>
#include <optional>
#include <utility>

namespace gpufeed::torch {

namespace detail {

/// How far the iterators of one `begin()` have gone, as their loader sees it.
struct iteration {
  bool fetched = false;    ///< the batch they point at was asked for
  bool exhausted = false;  ///< the loader said the epoch is over
};

/// @throws logic_error for `*` or `->` on `end()` (`at_end`: false) or on an iterator whose
/// epoch is over (true).
[[noreturn]] void throw_dereferenced_past_the_end(bool at_end);
/// @throws logic_error for `++` on `end()` (`at_end`: false) or on an iterator whose epoch is
/// over (true).
[[noreturn]] void throw_incremented_past_the_end(bool at_end);

}  // namespace detail

/// @brief An input iterator over one epoch of an `Owner` (a loader with
/// `std::optional<Batch> next()`): the loader's `begin()` and `end()` both return one.
///
/// It holds the current batch (a slot's lease for tensor batches) until it advances: the batch
/// goes back before the next one is asked for. Not thread-safe, as its loader.
template <class Owner, class Batch>
class loader_iterator {
  struct state : detail::iteration {
    explicit state(Owner* o) : owner{o} {}
    Owner* owner;
    std::optional<Batch> current;
  };

 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = Batch;
  using difference_type = std::ptrdiff_t;
  using pointer = Batch*;
  using reference = Batch&;

  /// @brief The end of every epoch: what `end()` returns.
  loader_iterator() = default;

  /// @brief The batch it points at (asked for now if it was not yet). Blocks as the loader's
  /// `next()` does. @throws logic_error on `end()` or once the epoch is over; whatever `next()`
  /// throws (then the next use asks again: the loader goes on with the following batch).
  [[nodiscard]] Batch& operator*() const { return current(); }
  [[nodiscard]] Batch* operator->() const { return &current(); }

  /// @brief Gives the current batch back and asks the loader for the next one; at the end of
  /// the epoch the iterator becomes equal to `end()`. @throws logic_error on `end()` or once
  /// the epoch is over; whatever `next()` throws.
  loader_iterator& operator++() {
    if (!state_) detail::throw_incremented_past_the_end(false);
    fetch();
    if (state_->exhausted) detail::throw_incremented_past_the_end(true);
    state_->current.reset();  // the slot goes back before the next batch is asked for
    state_->fetched = false;
    fetch();
    return *this;
  }
  /// @brief As `++it` (an input iterator's copies share their position, so the old position
  /// cannot be returned).
  void operator++(int) { ++*this; }

  /// @brief Two iterators of one `begin()` (copies) are equal, and so are two `end()`s; an
  /// iterator of `begin()` equals `end()` when its epoch is over (asking for its batch first if
  /// it was not yet); iterators of two `begin()` calls are not equal.
  friend bool operator==(loader_iterator const& a, loader_iterator const& b) {
    if (a.state_ == b.state_) return true;
    if (!a.state_) return b.at_end();
    if (!b.state_) return a.at_end();
    return false;
  }

  /// @brief Starts the iteration of `owner`'s epoch (loaders call it from `begin()`).
  [[nodiscard]] static loader_iterator started(Owner* owner) {
    loader_iterator it;
    it.state_ = std::make_shared<state>(owner);
    return it;
  }
  /// @brief What its loader keeps to know whether this iteration is still under way.
  [[nodiscard]] std::weak_ptr<detail::iteration const> progress() const noexcept { return state_; }

 private:
  void fetch() const {
    if (state_->fetched) return;
    auto next = state_->owner->next();  // may throw: nothing is recorded, the next use asks again
    state_->exhausted = !next.has_value();
    state_->current = std::move(next);
    state_->fetched = true;
  }
  [[nodiscard]] bool at_end() const {
    fetch();
    return state_->exhausted;
  }
  [[nodiscard]] Batch& current() const {
    if (!state_) detail::throw_dereferenced_past_the_end(false);
    fetch();
    if (state_->exhausted) detail::throw_dereferenced_past_the_end(true);
    return *state_->current;
  }

  std::shared_ptr<state> state_;  // null: end()
};

}  // namespace gpufeed::torch
