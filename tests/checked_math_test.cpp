// Sizes multiplied and added with a check (src/core/checked_math.hpp): an overflow is a
// logic_error naming what was sized, both operands, and the line of the caller that sized it.

#include "core/checked_math.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <limits>
#include <string>

namespace {

constexpr std::size_t largest = std::numeric_limits<std::size_t>::max();

std::string message_of(auto const& sizing) {
  try {
    (void)sizing();
  } catch (gpufeed::logic_error const& e) {
    return e.what();
  }
  return "";
}

TEST(checked_math_test, SizesThatFitAreExact) {
  using gpufeed::detail::checked_add;
  using gpufeed::detail::checked_mul;
  using gpufeed::detail::checked_round_up;
  EXPECT_EQ(checked_mul(largest / 2, 2, "a"), largest - 1);
  EXPECT_EQ(checked_add(largest - 1, 1, "b"), largest);
  EXPECT_EQ(checked_round_up(65, 64, "c"), 128U);
  EXPECT_EQ(checked_round_up(64, 64, "c"), 64U);
}

TEST(checked_math_test, AnOverflowNamesWhatTheOperandsAndTheCallersLine) {
  auto const line = std::to_string(__LINE__ + 2);
  auto const text = message_of([] {
    return gpufeed::detail::checked_mul(largest, 3, [] { return std::string{"field 'x' bytes"}; });
  });
  EXPECT_NE(text.find("field 'x' bytes: " + std::to_string(largest) + " x 3"), std::string::npos)
      << text;
  EXPECT_NE(text.find("checked_math_test.cpp:" + line), std::string::npos) << text;
  EXPECT_NE(message_of([] { return gpufeed::detail::checked_add(largest, 1, "sum"); }).find(" + 1"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              return gpufeed::detail::checked_round_up(largest, 64, "slot");
            }).find("slot: "),
            std::string::npos);
}

}  // namespace
