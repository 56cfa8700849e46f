#pragma once
// The low-GPU-utilization check of the system monitor, as a pure function of (time, reading)
// pairs so that the tests drive it with made-up times.

#include <cstddef>
#include <optional>

namespace gpufeed::detail {

/// The mean of the readings of one closed window.
struct window_mean {
  double mean_percent = 0;
  std::size_t readings = 0;
  double span_s = 0;  ///< from the window's first reading to the one that closed it
};

/// Consecutive, non-overlapping windows of at least `window_s` seconds. `add` answers the mean
/// of a window when the reading it is given closes that window (its time is `window_s` or more
/// after the window's first reading) and the mean is under `threshold_percent`: so at most one
/// answer per window. Readings without a value (GPU unknown) are not counted; a window without
/// any value answers nothing. A `window_s` of 0 or less turns the check off. Not thread-safe.
class utilization_window {
 public:
  utilization_window(double window_s, double threshold_percent) noexcept
      : window_s_{window_s}, threshold_percent_{threshold_percent} {}

  /// One reading taken at `time_s` (seconds on any monotonic clock, non-decreasing).
  [[nodiscard]] std::optional<window_mean> add(double time_s,
                                               std::optional<double> percent) noexcept;

 private:
  double window_s_;
  double threshold_percent_;
  std::optional<double> start_s_;  // the window's first reading
  double sum_ = 0;
  std::size_t readings_ = 0;
};

}  // namespace gpufeed::detail
