#pragma once
/// @file
/// @brief The HDF5 filters gpufeed undoes itself, outside any HDF5 call (internal).

#include <cstddef>
#include <span>
#include <string>

namespace gpufeed::detail {

/// @brief Inflates zlib data (HDF5's deflate filter) from `in` into `out`.
/// @return the number of bytes written, or -1 with `error` set when the data is corrupt or
/// inflates to more than `out.size()` bytes.
[[nodiscard]] std::ptrdiff_t hdf5_inflate(std::span<std::byte const> in, std::span<std::byte> out,
                                          std::string& error) noexcept;

/// @brief Undoes HDF5's shuffle filter: `in` holds byte 0 of every element, then byte 1, ...;
/// `out` (same size) gets the elements back. Trailing bytes that make no whole element are
/// copied as they are, as HDF5 does.
void hdf5_unshuffle(std::span<std::byte const> in, std::span<std::byte> out,
                    std::size_t element_size) noexcept;

}  // namespace gpufeed::detail
