#pragma once
// The picture of a run: samples/s and data-wait share over each run's own training time, one
// panel per feed, the same axes in every panel (and GPU utilization where a GPU was watched).

#include <filesystem>
#include <string>
#include <vector>

#include "training.hpp"

namespace train_classifier {

/// Writes the chart of `runs` as SVG to `path`; `caption` goes under the panels (settings,
/// machine). @throws std::runtime_error if the file cannot be written.
void write_chart(std::filesystem::path const& path, std::vector<run_result> const& runs,
                 std::string const& caption);

}  // namespace train_classifier
