// The demo's chart (chart.cpp) from made-up runs: each panel draws its run's samples/s and
// data-wait share, and GPU utilization where the run has it (a run with `--device cuda` on a
// machine whose GPU the monitor can read), at the heights the axes say. The GPU series is the
// part of `--device cuda`'s picture that a machine without a GPU can check.

#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "chart.hpp"
#include "support/image_fixtures.hpp"
#include "training.hpp"

namespace {

using train_classifier::pace_sample;
using train_classifier::run_result;

namespace layout = train_classifier::chart_layout;

run_result make_run(std::string feed, double rate, std::vector<std::optional<double>> gpu) {
  run_result run;
  run.feed = std::move(feed);
  run.samples = 4000;
  run.train_seconds = 4;
  run.wait_seconds = 1;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    run.pace.push_back({static_cast<double>(i + 1), rate, 0.25, gpu[i]});
  }
  return run;
}

std::string chart_of(std::vector<run_result> const& runs) {
  gpufeed::test::temp_dir const dir;
  auto const path = dir.path() / "chart.svg";
  train_classifier::write_chart(path, runs, "made-up runs");
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The points of every polyline drawn in `colour`, in order.
std::vector<std::string> polylines(std::string const& svg, std::string const& colour) {
  std::regex const pattern{"<polyline fill=\"none\" stroke=\"" + colour +
                           "\" stroke-width=\"[0-9.]+\" points=\"([^\"]*)\"/>"};
  std::vector<std::string> out;
  for (std::sregex_iterator it{svg.begin(), svg.end(), pattern}, end; it != end; ++it) {
    out.push_back((*it)[1].str());
  }
  return out;
}

std::string point(double t_s, double share, std::size_t panel, double max_t = 4) {
  std::ostringstream text;
  text.setf(std::ios::fixed);
  text.precision(1);
  double const plot_width = layout::width - layout::left - layout::right;
  double const panel_top =
      layout::first_panel_top + static_cast<double>(panel) * (layout::panel_height + layout::gap);
  text << layout::left + plot_width * t_s / max_t << ','
       << panel_top + layout::panel_height * (1 - share);
  return text.str();
}

constexpr char const* gpu_colour = layout::gpu_colour;
constexpr char const* wait_colour = layout::wait_colour;

TEST(train_classifier_chart, GpuUtilizationIsDrawnInEachPanelThatHasIt) {
  std::string const svg = chart_of(
      {make_run("gpufeed", 900, {90, 80, 85, 100}), make_run("torch::data", 300, {30, 0, 35, 25})});
  EXPECT_NE(svg.find("GPU utilization (right axis)"), std::string::npos) << "the legend";
  auto const gpu = polylines(svg, gpu_colour);
  ASSERT_EQ(gpu.size(), 2U) << "one GPU line per panel";
  // Right axis: 100 % at the top of a panel, 0 % at its bottom; a step from t = 0 to each sample.
  EXPECT_EQ(gpu[0], point(0, 0.9, 0) + ' ' + point(1, 0.9, 0) + ' ' + point(2, 0.8, 0) + ' ' +
                        point(3, 0.85, 0) + ' ' + point(4, 1.0, 0) + ' ');
  EXPECT_EQ(gpu[1], point(0, 0.3, 1) + ' ' + point(1, 0.3, 1) + ' ' + point(2, 0, 1) + ' ' +
                        point(3, 0.35, 1) + ' ' + point(4, 0.25, 1) + ' ');
  auto const wait = polylines(svg, wait_colour);
  ASSERT_EQ(wait.size(), 2U);
  EXPECT_EQ(wait[1].substr(0, wait[1].find(' ')), point(0, 0.25, 1)) << "the same right axis";
}

TEST(train_classifier_chart, NoGpuNoGpuLineNorLegend) {
  std::string const svg = chart_of({make_run("gpufeed", 900, {std::nullopt, std::nullopt}),
                                    make_run("torch::data", 300, {std::nullopt, std::nullopt})});
  EXPECT_EQ(svg.find("GPU utilization"), std::string::npos);
  EXPECT_TRUE(polylines(svg, gpu_colour).empty());
  EXPECT_EQ(polylines(svg, wait_colour).size(), 2U) << "the data-wait lines are still there";
}

// Intervals where the monitor could not read the GPU are left out of the line, not drawn as 0 %.
TEST(train_classifier_chart, GpuSamplesMissingInBetweenAreSkipped) {
  std::string const svg =
      chart_of({make_run("gpufeed", 900, {70, std::nullopt, std::nullopt, 50})});
  auto const gpu = polylines(svg, gpu_colour);
  ASSERT_EQ(gpu.size(), 1U);
  EXPECT_EQ(gpu[0], point(0, 0.7, 0) + ' ' + point(1, 0.7, 0) + ' ' + point(4, 0.5, 0) + ' ');
}

}  // namespace
