#include "gpufeed/observe/detail/utilization_window.hpp"

namespace gpufeed::detail {

std::optional<window_mean> utilization_window::add(double time_s,
                                                   std::optional<double> percent) noexcept {
  if (window_s_ <= 0) return std::nullopt;
  if (!start_s_) start_s_ = time_s;
  if (percent) {
    sum_ += *percent;
    ++readings_;
  }
  double const span = time_s - *start_s_;
  if (span < window_s_) return std::nullopt;
  std::optional<window_mean> low;
  if (readings_ > 0) {
    double const mean = sum_ / static_cast<double>(readings_);
    if (mean < threshold_percent_) {
      low = window_mean{.mean_percent = mean, .readings = readings_, .span_s = span};
    }
  }
  // The next window starts with the next reading.
  start_s_.reset();
  sum_ = 0;
  readings_ = 0;
  return low;
}

}  // namespace gpufeed::detail
