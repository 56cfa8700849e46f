// The HDF5 filters gpufeed undoes itself: unshuffle and inflate.

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "datasets/hdf5_filters.hpp"

namespace {

using bytes_t = std::vector<std::byte>;

TEST(hdf5_filters_test, UnshuffleKeepsTrailingBytes) {
  // 3 elements of 4 bytes (0x10.., 0x20.., 0x30..) plus 2 trailing bytes, shuffled as HDF5 does.
  std::vector<std::uint8_t> const plain{0x10, 0x11, 0x12, 0x13, 0x20, 0x21, 0x22,
                                        0x23, 0x30, 0x31, 0x32, 0x33, 0xA0, 0xA1};
  std::vector<std::uint8_t> const shuffled{0x10, 0x20, 0x30, 0x11, 0x21, 0x31, 0x12,
                                           0x22, 0x32, 0x13, 0x23, 0x33, 0xA0, 0xA1};
  bytes_t out(plain.size());
  gpufeed::detail::hdf5_unshuffle(std::as_bytes(std::span{shuffled}), out, 4);
  EXPECT_EQ(out, bytes_t(reinterpret_cast<std::byte const*>(plain.data()),
                         reinterpret_cast<std::byte const*>(plain.data()) + plain.size()));
}

TEST(hdf5_filters_test, InflateChecksSizeAndCorruption) {
  std::vector<std::uint8_t> plain(1000);
  for (std::size_t i = 0; i < plain.size(); ++i) plain[i] = static_cast<std::uint8_t>(i % 7);
  std::vector<std::uint8_t> packed(compressBound(plain.size()));
  auto packed_size = static_cast<uLongf>(packed.size());
  ASSERT_EQ(compress2(packed.data(), &packed_size, plain.data(), plain.size(), 6), Z_OK);
  auto const in = std::as_bytes(std::span{packed}.first(packed_size));
  std::string error;
  bytes_t exact(plain.size());
  EXPECT_EQ(gpufeed::detail::hdf5_inflate(in, exact, error), 1000);
  EXPECT_EQ(std::memcmp(exact.data(), plain.data(), plain.size()), 0);
  bytes_t small(999);
  EXPECT_EQ(gpufeed::detail::hdf5_inflate(in, small, error), -1);
  EXPECT_NE(error.find("more than"), std::string::npos) << error;
  bytes_t out(plain.size());
  EXPECT_EQ(gpufeed::detail::hdf5_inflate(in.first(in.size() / 2), out, error), -1);
  EXPECT_FALSE(error.empty());
  auto corrupt = packed;
  for (std::size_t i = 2; i < 12; ++i) corrupt[i] = 0xFF;
  EXPECT_EQ(gpufeed::detail::hdf5_inflate(std::as_bytes(std::span{corrupt}.first(packed_size)), out,
                                          error),
            -1);
}

}  // namespace
