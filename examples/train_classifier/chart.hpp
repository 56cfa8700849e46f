#pragma once
// The picture of a run: samples/s and data-wait share over each run's own training time, one
// panel per feed, the same axes in every panel (and GPU utilization where a GPU was watched).

#include <filesystem>
#include <string>
#include <vector>

#include "training.hpp"

namespace train_classifier {

/// The chart's geometry (pixels) and colours; its test reads the series' heights with them.
namespace chart_layout {
inline constexpr double width = 900;
inline constexpr double panel_height = 240;
inline constexpr double left = 70;                   // room for the samples/s axis
inline constexpr double right = 60;                  // room for the percent axis
inline constexpr double top = 56;                    // title and legend
inline constexpr double first_panel_top = top + 18;  // the first panel's title above it
inline constexpr double gap = 54;                    // between panels: the next panel's title
inline constexpr double bottom = 70;                 // the time axis and the caption
inline constexpr char const* rate_colour = "#1f77b4";
inline constexpr char const* wait_colour = "#d62728";
inline constexpr char const* gpu_colour = "#2ca02c";
}  // namespace chart_layout

/// Writes the chart of `runs` as SVG to `path`; `caption` goes under the panels (settings,
/// machine). @throws std::runtime_error if the file cannot be written.
void write_chart(std::filesystem::path const& path, std::vector<run_result> const& runs,
                 std::string const& caption);

}  // namespace train_classifier
