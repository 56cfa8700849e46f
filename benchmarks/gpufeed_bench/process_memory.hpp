#pragma once
// What the kernel says about this process's memory.

#include <cstdint>
#include <optional>

namespace gpufeed::bench {

/// Peak resident set size (VmHWM in /proc/self/status), or nothing where it cannot be read.
/// Process-wide and monotonic: it includes everything the tool allocated so far.
[[nodiscard]] std::optional<std::uint64_t> peak_rss_bytes();

}  // namespace gpufeed::bench
