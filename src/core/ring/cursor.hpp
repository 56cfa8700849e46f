#pragma once
// A batch's place in the plan, as the ring and the epoch source count it.

#include <compare>
#include <cstddef>
#include <cstdint>

namespace gpufeed::detail {

/// (epoch, sequence within the epoch); ordered as the batches are delivered.
struct cursor {
  std::uint64_t epoch = 0;
  std::size_t sequence = 0;
  friend bool operator==(cursor const&, cursor const&) = default;
  friend auto operator<=>(cursor const&, cursor const&) = default;
};

}  // namespace gpufeed::detail
