#pragma once
// The report every subcommand produces, and its JSON form (written by --json FILE): a version 3
// report of docs/benchmarks/schema.json (checked by the bench.schema.* tests), whose fields
// docs/benchmarks/README.md describes.

#include <cstdint>
#include <string>
#include <vector>

#include "bench_json.hpp"
#include "machine_info.hpp"
#include "result.hpp"

namespace gpufeed::bench {

/// What a goal's value is computed from, written with the goal so that a reader knows.
enum class statistic : std::uint8_t {
  /// The median over the repeats of the ratio of two peers run back to back in that repeat.
  median_of_paired_ratios,
  /// The median over the repeats of one figure per repeat (each on a fresh loader).
  median_of_repeats,
  /// One run's figure.
  one_run,
};

/// A target a subcommand checks its figures against.
struct goal {
  std::string metric;      ///< e.g. "handoff_us"
  std::string comparison;  ///< "<" or ">="
  double target = 0;
  double value = 0;
  statistic from = statistic::one_run;
  [[nodiscard]] bool met() const noexcept {
    return comparison == "<" ? value < target : value >= target;
  }
};

/// The version written as "schema_version"; docs/benchmarks/schema.json accepts 1 to 3.
inline constexpr int report_schema_version = 3;

struct report {
  std::string command;                    ///< the subcommand (main fills it in)
  std::vector<std::string> command_line;  ///< argv as given (main fills it in)
  machine_info machine;
  json config = json::object();
  std::vector<bench_result> results;
  std::vector<goal> goals;
};

[[nodiscard]] json to_json(grid_cell const& cell);
[[nodiscard]] json to_json(bench_result const& result);
[[nodiscard]] json to_json(goal const& target);
[[nodiscard]] char const* to_string(statistic from) noexcept;
[[nodiscard]] json to_json(report const& rep);

/// The time now in UTC, as std::strftime writes it with `format` (at most 31 characters).
[[nodiscard]] std::string utc_now(char const* format);

/// Writes `to_json(rep)` to `path`, indented. @throws std::runtime_error if it cannot.
void write_json(report const& rep, std::string const& path);

}  // namespace gpufeed::bench
