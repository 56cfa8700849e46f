#pragma once
// The cache line the loader pads its hot atomics to, so that counters written by different
// threads never share a line (false sharing): 64 bytes on x86-64 and on most ARM64 cores. One
// constant for every padded type; next to each, static_asserts check that the padding is there
// (as rigtorp's SPSCQueue does). std::hardware_destructive_interference_size is not used: GCC
// warns that its value may change between compiler versions, and a layout must not.

#include <cstddef>

namespace gpufeed::detail {

inline constexpr std::size_t cache_line_bytes = 64;

}  // namespace gpufeed::detail
