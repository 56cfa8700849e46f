#pragma once
/// @file
/// @brief A progress line: throughput, stall, GPU, CPU and memory of a run, on one line.
/// Part of `gpufeed::observe` (link that CMake target).
///
/// @code
/// gpufeed::system_monitor monitor;                  // GPU / CPU / memory, sampled each second
/// gpufeed::progress_line progress;                  // stderr: redrawn in place on a terminal
/// for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
///   loader.set_epoch(epoch);
///   for (auto& batch : loader) {
///     train_step(batch);
///     progress.update(loader, &monitor);            // cheap; draws at most every interval
///   }
///   progress.end_epoch(loader.snapshot(), epoch);   // one summary line, through the log
/// }
/// @endcode
///
/// On a terminal the line is redrawn in place ("\r", the line, ANSI erase-to-end-of-line) at
/// most every `progress_options::tty_interval`; elsewhere (a log file, a pipe, a batch job)
/// plain lines go through gpufeed's logger at most every `progress_options::plain_interval`.
/// Epoch summaries always go through the logger.
///
/// The formatting functions are pure (values in, a string out), for programs that print their
/// own lines.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "gpufeed/observe/monitor.hpp"
#include "gpufeed/stats.hpp"

namespace gpufeed {

class loader;

/// @brief Where the consumer stands in the run.
struct progress_position {
  std::uint64_t epoch = 0;
  std::uint64_t batch = 0;              ///< batches of `epoch` delivered so far
  std::uint64_t batches_per_epoch = 0;  ///< 0 when unknown
};

/// @brief `loader`'s position (from `state()` and `batches_per_epoch()`).
[[nodiscard]] progress_position position_of(loader const& loader);

/// @brief The values one progress line shows; an empty optional is shown as "n/a".
struct progress_values {
  std::optional<progress_position> position{};  ///< shown as "epoch - batch -" when empty
  double samples_per_s = 0;
  double stall_fraction = 0;                        ///< 0-1
  std::optional<double> gpu_percent{};              ///< 0-100
  std::optional<std::uint64_t> gpu_memory_used{};   ///< bytes
  std::optional<std::uint64_t> gpu_memory_total{};  ///< bytes
  std::optional<double> cpu_percent{};              ///< this process, percent of one core
  std::optional<std::uint64_t> ram_used{};          ///< the machine's, bytes
  std::optional<std::uint64_t> ram_total{};         ///< bytes
};

/// @brief The values of a line: the throughput and stall between `previous` and `now` (two
/// snapshots of one loader; since the loader's start when `previous` is null or was taken
/// later than `now`), and the monitor's fields of `sample`.
[[nodiscard]] progress_values progress_values_of(stats const& now, stats const* previous,
                                                 std::optional<monitor_sample> const& sample,
                                                 std::optional<progress_position> position);

/// @brief One line, no newline, e.g.
/// `epoch 2 batch 150/1563 | 20480 samples/s | stall 0.4% | GPU 87% | VRAM 12.3/80.0 GiB |
/// CPU 312% | RAM 23.1/62.8 GiB`.
[[nodiscard]] std::string format_progress(progress_values const& values);

/// @brief `bytes` in binary units: "512 B", "2.0 KiB", "12.3 MiB", "80.0 GiB", "1.5 TiB".
[[nodiscard]] std::string format_bytes(std::uint64_t bytes);
/// @brief "used/total unit" in the total's unit ("12.3/80.0 GiB"); only `used` when the total
/// is unknown; "n/a" when `used` is unknown.
[[nodiscard]] std::string format_memory(std::optional<std::uint64_t> used,
                                        std::optional<std::uint64_t> total);
/// @brief "87%", "0.4%" below 10, or "n/a".
[[nodiscard]] std::string format_percent(std::optional<double> percent);

/// @brief What one epoch did.
struct epoch_summary {
  std::uint64_t epoch = 0;
  std::uint64_t samples = 0;
  double seconds = 0;
  double stall_fraction = 0;  ///< 0-1
  std::uint64_t skipped = 0;
};

/// @brief The difference between two snapshots of one loader: `end` at the end of the epoch,
/// `start` at its start (a default `stats` for the loader's start).
[[nodiscard]] epoch_summary epoch_summary_of(std::uint64_t epoch, stats const& end,
                                             stats const& start);
/// @brief E.g. `epoch 2: 50000 samples in 12.3 s (4065 samples/s), stall 0.4%, skipped 0`.
[[nodiscard]] std::string format_epoch_summary(epoch_summary const& summary);

/// @brief Where and how often a progress_line draws.
struct progress_options {
  /// The terminal to draw on (stderr, where the log goes, by default).
  int fd = 2;
  /// Redraw in place? Unset: when `fd` is a terminal (isatty).
  std::optional<bool> tty{};
  /// At most one redraw per interval on a terminal ...
  std::chrono::milliseconds tty_interval{500};
  /// ... and one logged line per interval elsewhere.
  std::chrono::milliseconds plain_interval{std::chrono::seconds{30}};
  /// Writes the in-place redraws; unset: write(2) to `fd`. (For tests, and for terminals
  /// other than a file descriptor.)
  std::function<void(std::string_view)> write{};
  /// The clock that rate-limits; unset: std::chrono::steady_clock::now. (For tests.)
  std::function<std::chrono::steady_clock::time_point()> clock{};
};

/// @brief Draws a progress line, rate-limited, and logs epoch summaries.
///
/// Threading: one thread at a time (usually the training loop); it does not synchronize.
class progress_line {
 public:
  /// @brief Starts the rate limit's clock: the first line is drawn one interval after this.
  explicit progress_line(progress_options options = {});
  /// @brief On a terminal, ends the drawn line with a newline so that what follows starts on
  /// its own line. Never throws.
  ~progress_line();
  progress_line(progress_line const&) = delete;
  progress_line& operator=(progress_line const&) = delete;
  progress_line(progress_line&&) = delete;
  progress_line& operator=(progress_line&&) = delete;

  /// @brief Draws a line (on the terminal, or through the logger at level info) if the
  /// interval has passed since the last one; otherwise does nothing and returns false. The
  /// throughput and stall shown are those since the previous line. Does not block beyond the
  /// write.
  bool update(stats const& now, std::optional<monitor_sample> const& sample = {},
              std::optional<progress_position> position = {});
  /// @brief As above, from `loader.snapshot()`, `position_of(loader)` and `monitor->latest()`
  /// (no monitor fields when `monitor` is null). Takes the snapshot only when it draws.
  bool update(loader const& loader, system_monitor const* monitor = nullptr);

  /// @brief Logs the summary of the epoch that ended at `now` (since the previous call's `now`,
  /// or since the loader's start for the first), clearing the terminal's line first; returns
  /// the line logged.
  std::string end_epoch(stats const& now, std::uint64_t epoch);

  /// @brief Whether lines are redrawn in place.
  [[nodiscard]] bool tty() const noexcept { return tty_; }
  /// @brief The last line drawn or logged by update(), empty before the first.
  [[nodiscard]] std::string const& last_line() const noexcept { return last_line_; }

 private:
  [[nodiscard]] bool due();
  // update()'s drawing, once due() said yes: the line since `previous_`, which `now` replaces.
  void draw_since_previous(stats const& now, std::optional<monitor_sample> const& sample,
                           std::optional<progress_position> position);
  void draw(std::string line);
  void write(std::string_view text) const;

  progress_options options_;
  bool tty_ = false;
  bool drawn_ = false;  // a line is on the terminal, not yet ended
  std::chrono::steady_clock::time_point last_draw_;
  std::optional<stats> previous_;  // at the last line drawn
  stats epoch_start_;
  std::string last_line_;
};

}  // namespace gpufeed
