#include "json_report.hpp"

#include <ctime>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "gpufeed/version.hpp"

namespace gpufeed::bench {
namespace {

template <class T>
json or_null(std::optional<T> const& value) {
  return value ? json(*value) : json(nullptr);
}

}  // namespace

std::string utc_now(char const* format) {
  std::time_t const now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32] = {};
  std::strftime(text, sizeof(text), format, &parts);
  return text;
}

json to_json(grid_cell const& cell) {
  return {{"batch_size", cell.batch_size},
          {"workers", cell.workers},
          {"prefetch_depth", cell.prefetch_depth},
          {"chosen_by", cell.chosen_by}};
}

json to_json(bench_result const& result) {
  return {{"loader", result.loader},
          {"samples_per_s", or_null(result.samples_per_s)},
          {"batches_per_s", or_null(result.batches_per_s)},
          {"bytes_per_s", or_null(result.bytes_per_s)},
          {"handoff_us", or_null(result.handoff_us)},
          {"memcpy_bytes_per_s", or_null(result.memcpy_bytes_per_s)},
          {"ratio", or_null(result.ratio)},
          {"peak_rss_bytes", or_null(result.peak_rss_bytes)},
          {"pinned_bytes", or_null(result.pinned_bytes)},
          {"skipped", or_null(result.skipped)},
          {"cell", result.cell ? to_json(*result.cell) : json(nullptr)},
          {"details", result.details}};
}

char const* to_string(statistic from) noexcept {
  switch (from) {
    case statistic::median_of_paired_ratios:
      return "median_of_paired_ratios";
    case statistic::median_of_repeats:
      return "median_of_repeats";
    case statistic::one_run:
      break;
  }
  return "one_run";
}

json to_json(goal const& target) {
  return {{"metric", target.metric}, {"comparison", target.comparison},
          {"target", target.target}, {"value", target.value},
          {"met", target.met()},     {"statistic", to_string(target.from)}};
}

json to_json(report const& rep) {
  json results = json::array();
  for (auto const& result : rep.results) results.push_back(to_json(result));
  json goals = json::array();
  for (auto const& target : rep.goals) goals.push_back(to_json(target));
  return {{"tool", "gpufeed-bench"},
          {"schema_version", report_schema_version},
          {"gpufeed_version", gpufeed::version},
          {"command", rep.command},
          {"command_line", rep.command_line},
          {"date", utc_now("%Y-%m-%dT%H:%M:%SZ")},
          {"machine", to_json(rep.machine)},
          {"config", rep.config},
          {"results", std::move(results)},
          {"goals", std::move(goals)}};
}

void write_json(report const& rep, std::string const& path) {
  std::ofstream out{path};
  if (!out) throw std::runtime_error{"cannot open '" + path + "' for writing"};
  out << to_json(rep).dump(2) << '\n';
  if (!out.flush()) throw std::runtime_error{"cannot write '" + path + "'"};
}

}  // namespace gpufeed::bench
