#pragma once
/// @file
/// @brief Linux's /proc, read and parsed: what the system monitor samples, for programs that
/// read the same files themselves (gpufeed-bench does). Part of `gpufeed::observe`.
///
/// @code
/// if (auto const status = gpufeed::observe::read_proc_file("/proc/self/status")) {
///   auto const peak = gpufeed::observe::parse_kb_field(*status, "VmHWM");  // bytes
/// }
/// @endcode
///
/// The parsers are pure functions of the files' text (so the tests feed them fixtures);
/// `read_proc_file` is the only one that touches the file system. Every parser answers an empty
/// optional for text it does not recognize instead of throwing: a monitor must keep running on a
/// kernel that formats a file differently. Thread-safe: nothing here keeps state.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpufeed::observe {

/// CPU time of a process, in clock ticks (sysconf(_SC_CLK_TCK) per second).
struct process_cpu_ticks {
  std::uint64_t user = 0;    ///< utime, field 14 of /proc/<pid>/stat
  std::uint64_t system = 0;  ///< stime, field 15
  [[nodiscard]] std::uint64_t total() const noexcept { return user + system; }
};

/// The machine's CPU time from the aggregate "cpu" line of /proc/stat, in clock ticks summed over
/// every CPU.
struct system_cpu_ticks {
  std::uint64_t busy = 0;  ///< user + nice + system + irq + softirq + steal
  std::uint64_t idle = 0;  ///< idle + iowait
  [[nodiscard]] std::uint64_t total() const noexcept { return busy + idle; }
};

/// Memory of the machine from /proc/meminfo, in bytes.
struct memory_info {
  std::uint64_t total = 0;      ///< MemTotal
  std::uint64_t available = 0;  ///< MemAvailable (MemFree + Buffers + Cached on kernels < 3.14)
  [[nodiscard]] std::uint64_t used() const noexcept {
    return total > available ? total - available : 0;
  }
};

/// utime and stime from the text of /proc/<pid>/stat. The command name (field 2) may contain
/// spaces and parentheses, so the fields are counted from its last ')'.
[[nodiscard]] std::optional<process_cpu_ticks> parse_process_stat(std::string_view text);

/// The aggregate "cpu " line of the text of /proc/stat (its first line). guest and guest_nice
/// are not added: the kernel already counts them in user and nice.
[[nodiscard]] std::optional<system_cpu_ticks> parse_system_stat(std::string_view text);

/// Resident pages (the second field) of the text of /proc/<pid>/statm.
[[nodiscard]] std::optional<std::uint64_t> parse_statm_resident_pages(std::string_view text);

/// VmRSS of the text of /proc/<pid>/status, in bytes (absent for kernel threads).
[[nodiscard]] std::optional<std::uint64_t> parse_status_rss_bytes(std::string_view text);

/// MemTotal and MemAvailable of the text of /proc/meminfo.
[[nodiscard]] std::optional<memory_info> parse_meminfo(std::string_view text);

/// The value of the "Key:   123 kB" line of /proc/meminfo or /proc/<pid>/status, in bytes
/// (kB is 1024 bytes there; a value without a unit is returned as is).
[[nodiscard]] std::optional<std::uint64_t> parse_kb_field(std::string_view text,
                                                          std::string_view key);

/// Percent of one core: `ticks` of CPU time over `wall_s` seconds of wall time.
[[nodiscard]] double cpu_percent(std::uint64_t ticks, double wall_s, long ticks_per_s) noexcept;

/// Percent (0-100) of the machine's CPU time that was busy between two readings; empty when
/// no time passed or the counters went backwards.
[[nodiscard]] std::optional<double> system_cpu_percent(system_cpu_ticks const& before,
                                                       system_cpu_ticks const& after) noexcept;

/// Up to `max_bytes` of a /proc file (they report size 0, so they are read until the end);
/// empty when it cannot be opened or read.
[[nodiscard]] std::optional<std::string> read_proc_file(char const* path,
                                                        std::size_t max_bytes = 1 << 16);

}  // namespace gpufeed::observe
