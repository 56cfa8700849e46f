#pragma once
// The input iterator behind range-for over a loader: it holds the current item (a batch, or the
// torch adapter's tensor_batch) until it advances, and ends when the owner's next() says the
// epoch is over.

#include <cstddef>
#include <iterator>
#include <optional>

namespace gpufeed::detail {

/// `Owner` has `std::optional<Value> next()`.
template <class Owner, class Value>
class epoch_iterator {
 public:
  using value_type = Value;
  using difference_type = std::ptrdiff_t;
  epoch_iterator() = default;
  explicit epoch_iterator(Owner* owner) : owner_{owner} { ++*this; }
  Value& operator*() const noexcept { return *current_; }
  Value* operator->() const noexcept { return &*current_; }
  epoch_iterator& operator++() {
    current_.reset();  // the current item gives its slot back before the next one is asked for
    current_ = owner_->next();
    return *this;
  }
  void operator++(int) { ++*this; }
  friend bool operator==(epoch_iterator const& it, std::default_sentinel_t) noexcept {
    return !it.current_.has_value();
  }

 private:
  Owner* owner_ = nullptr;
  mutable std::optional<Value> current_;
};

}  // namespace gpufeed::detail
