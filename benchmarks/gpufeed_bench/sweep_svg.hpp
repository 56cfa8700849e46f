#pragma once
// The chart of `gpufeed-bench sweep`, as a self-contained SVG file (no dependencies): one column
// of panels per batch size; the top row samples/s against workers, the bottom row the stall
// fraction; one line per prefetch depth; min-max bars over the repeats; the best cell ringed.

#include <string>
#include <vector>

#include "result.hpp"

namespace gpufeed::bench {

/// One cell of the grid, as measured.
struct sweep_point {
  grid_cell cell;  ///< a row not chosen by the grid (a later --auto) is drawn as a star
  double samples_per_s = 0;
  double samples_per_s_min = 0;
  double samples_per_s_max = 0;
  double stall_fraction = 0;
  bool best = false;
};

struct sweep_chart {
  std::string title;
  std::vector<std::string> subtitle;  ///< lines under the title (keep each under ~110 characters)
  std::vector<sweep_point> points;
};

/// The chart as SVG text.
[[nodiscard]] std::string sweep_svg(sweep_chart const& chart);

/// Writes `sweep_svg(chart)` to `path`. @throws std::runtime_error if it cannot.
void write_sweep_svg(sweep_chart const& chart, std::string const& path);

}  // namespace gpufeed::bench
