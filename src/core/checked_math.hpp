#pragma once
// Sizes multiplied and added with a check. A size that comes from what a user gives (a field's
// shape, batch_size, prefetch_depth, a file's dimensions) is never allowed to wrap around: a
// wrapped product is a small number, and a small buffer handed to a copy that believes in the
// large one is memory corruption. An overflow is a gpufeed::logic_error that names what was being
// sized and both operands.
//
//   auto const bytes = detail::checked_mul(elements, size_of(type),
//                                          [&] { return "field '" + name + "' bytes"; });
//
// `what` is a callable that returns the description (built only when the check fails, so the
// common path allocates nothing) or anything a std::string can be made from.

#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "gpufeed/error.hpp"

namespace gpufeed::detail {

/// `a * b`, or nullopt when the product does not fit in std::size_t.
[[nodiscard]] constexpr std::optional<std::size_t> try_mul(std::size_t a, std::size_t b) noexcept {
  std::size_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

/// `a + b`, or nullopt when the sum does not fit in std::size_t.
[[nodiscard]] constexpr std::optional<std::size_t> try_add(std::size_t a, std::size_t b) noexcept {
  std::size_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

/// Where a check was made: the caller's file and line. GCC's and Clang's __builtin_FILE and
/// __builtin_LINE as default arguments give the caller's; std::source_location would too, but
/// Clang 14 (the fuzz build's compiler) cannot compile libstdc++ 12's <source_location>.
struct call_site {
  char const* file;
  int line;
};

namespace checked_math_detail {
template <class What>
std::string describe(What const& what) {
  if constexpr (std::is_invocable_v<What const&>) {
    return std::string{what()};
  } else {
    return std::string{what};
  }
}

[[noreturn]] inline void overflow(std::string const& what, std::size_t a, char op, std::size_t b,
                                  call_site where) {
  throw_logic_error("the size fits in std::size_t",
                    what + ": " + std::to_string(a) + ' ' + op + ' ' + std::to_string(b) +
                        " is more than the largest size (" +
                        std::to_string(std::numeric_limits<std::size_t>::max()) +
                        "); make it smaller",
                    where.file, where.line);
}

// The result of a try_ function, or the logic_error that says what overflowed.
template <class What>
std::size_t value_or_throw(std::optional<std::size_t> result, std::size_t a, char op, std::size_t b,
                           What const& what, call_site where) {
  if (result) return *result;
  overflow(describe(what), a, op, b, where);
}
}  // namespace checked_math_detail

/// `a * b`. @throws logic_error "<what>: a x b is more than the largest size ..." on overflow.
template <class What>
[[nodiscard]] std::size_t checked_mul(std::size_t a, std::size_t b, What const& what,
                                      char const* file = __builtin_FILE(),
                                      int line = __builtin_LINE()) {
  return checked_math_detail::value_or_throw(try_mul(a, b), a, 'x', b, what, {file, line});
}

/// `a + b`. @throws logic_error "<what>: a + b is more than the largest size ..." on overflow.
template <class What>
[[nodiscard]] std::size_t checked_add(std::size_t a, std::size_t b, What const& what,
                                      char const* file = __builtin_FILE(),
                                      int line = __builtin_LINE()) {
  return checked_math_detail::value_or_throw(try_add(a, b), a, '+', b, what, {file, line});
}

/// `bytes` rounded up to a multiple of `multiple` (more than 0).
/// @throws logic_error as checked_add does when the rounded size does not fit.
template <class What>
[[nodiscard]] std::size_t checked_round_up(std::size_t bytes, std::size_t multiple,
                                           What const& what, char const* file = __builtin_FILE(),
                                           int line = __builtin_LINE()) {
  return checked_add(bytes, multiple - 1, what, file, line) / multiple * multiple;
}

}  // namespace gpufeed::detail
