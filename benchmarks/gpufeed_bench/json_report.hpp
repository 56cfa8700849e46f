#pragma once
// The report every subcommand produces, and its JSON form (written by --json FILE).
//
// Schema (version 2), shared by all subcommands; the JSON Schema is docs/benchmarks/schema.json
// (validated by the bench.schema.* tests) and docs/benchmarks/README.md describes the fields:
//   {"tool": "gpufeed-bench", "schema_version": 2, "gpufeed_version": "0.1.0",
//    "command": "<subcommand>", "command_line": ["gpufeed-bench", "<subcommand>", ...],
//    "date": "<UTC ISO 8601>",
//    "machine": {"cpus": N, "gpu": null | "<name>", ...},
//    "config": {<every flag of the subcommand>},
//    "results": [{"loader": "...", "samples_per_s": x | null, "batches_per_s": ..., "bytes_per_s",
//                 "handoff_us", "memcpy_bytes_per_s", "ratio", "peak_rss_bytes",
//                 "pinned_bytes", "skipped", "cell": null | {"batch_size", "workers",
//                 "prefetch_depth", "chosen_by"}, "details": {...}}],
//    "goals": [{"metric": "...", "comparison": "<" | ">=", "target": x, "value": y,
//               "met": bool}]}

#include <string>
#include <vector>

#include "bench_json.hpp"
#include "machine_info.hpp"
#include "result.hpp"

namespace gpufeed::bench {

/// A target a subcommand checks its figures against.
struct goal {
  std::string metric;      ///< e.g. "handoff_us"
  std::string comparison;  ///< "<" or ">="
  double target = 0;
  double value = 0;
  [[nodiscard]] bool met() const noexcept {
    return comparison == "<" ? value < target : value >= target;
  }
};

/// The version written as "schema_version"; docs/benchmarks/schema.json accepts 1 and 2.
inline constexpr int report_schema_version = 2;

struct report {
  std::string command;
  std::vector<std::string> command_line;  ///< argv as given (main fills it in)
  machine_info machine;
  json config = json::object();
  std::vector<bench_result> results;
  std::vector<goal> goals;
};

[[nodiscard]] json to_json(grid_cell const& cell);
[[nodiscard]] json to_json(bench_result const& result);
[[nodiscard]] json to_json(goal const& target);
[[nodiscard]] json to_json(report const& rep);

/// Writes `to_json(rep)` to `path`, indented. @throws std::runtime_error if it cannot.
void write_json(report const& rep, std::string const& path);

}  // namespace gpufeed::bench
