#pragma once
/// @file
/// @brief A loader's statistics as JSON lines, for logs and dashboards.
///
/// @code
/// gpufeed::stats_writer log{"run/loader-stats.jsonl"};
/// for (auto& batch : loader) {
///   train_step(batch);
///   if (batch.sequence() % 100 == 0) log.write(loader.snapshot());  // one line, timestamped
/// }
/// @endcode
///
/// Each line is one JSON object with stable field names: every scalar field of `stats` under
/// its own name, the helpers (`stall_fraction`, `steady_stall_fraction`, `samples_per_s`,
/// `bytes_per_s`, `worker_busy_fraction`), `stages` (`read`, `slot_wait`, `consumer_wait`,
/// `h2d`, `transform`, each `{count, total_s, p50_s, p99_s, max_s}`) and `diagnosis`
/// (`{kind, sentence}`, from diagnose()). The lists (`skipped_indices`, `ring_history`) are
/// left out to keep lines short: a line per interval is itself a time series of the ring.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iosfwd>
#include <string>

#include "gpufeed/stats.hpp"

namespace gpufeed {

/// @brief `s` as one line of JSON (no trailing newline).
[[nodiscard]] std::string to_json(stats const& s);

/// @brief Writes `s` as one JSON line, with `time` (UTC, ISO 8601 with milliseconds) and
/// `unix_s` first, and a newline.
void write_json_line(std::ostream& out, stats const& s,
                     std::chrono::system_clock::time_point when = std::chrono::system_clock::now());

/// @brief Appends timestamped JSON lines to a file. One thread at a time.
class stats_writer {
 public:
  /// @brief Opens `path` for appending (creating it).
  /// @throws file_error when it cannot be opened.
  explicit stats_writer(std::filesystem::path path);
  /// @brief Appends one line for `s`, stamped now, and flushes it.
  /// @throws file_error when the line cannot be written.
  void write(stats const& s);
  [[nodiscard]] std::filesystem::path const& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  std::ofstream file_;
};

}  // namespace gpufeed
