#pragma once
// One row of a report: what one loader (or one reference, such as memcpy_peak) achieved.
//
// Every subcommand fills the same fields, so reports compare across subcommands and across
// machines; a field that does not apply stays empty and is written as JSON null.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "bench_json.hpp"

namespace gpufeed::bench {

/// The loader settings of one row of a grid (`gpufeed-bench sweep`).
struct grid_cell {
  std::size_t batch_size = 0;
  unsigned workers = 0;
  std::size_t prefetch_depth = 0;
  /// How the settings were chosen: "grid" (given) or "auto" (the autotuner's choice, sweep
  /// --auto; the settings it ended the run with).
  std::string chosen_by = "grid";
  [[nodiscard]] bool from_grid() const noexcept { return chosen_by == "grid"; }
};

struct bench_result {
  std::string loader;                           ///< "gpufeed", "memcpy_peak", "torch_cpp", ...
  std::optional<double> samples_per_s;          ///< samples delivered per second
  std::optional<double> batches_per_s;          ///< batches delivered per second
  std::optional<double> bytes_per_s;            ///< sample bytes delivered per second
  std::optional<double> handoff_us;             ///< consumer cost of next() + release, ready batch
  std::optional<double> memcpy_bytes_per_s;     ///< the machine's memcpy peak measured alongside
  std::optional<double> ratio;                  ///< bytes_per_s / memcpy_bytes_per_s
  std::optional<std::uint64_t> peak_rss_bytes;  ///< process VmHWM after the run
  std::optional<std::uint64_t> pinned_bytes;    ///< page-locked memory the loader held
  std::optional<std::uint64_t> skipped;         ///< samples skipped (--on-error skip)
  std::optional<grid_cell> cell;                ///< sweep: the loader settings of this row
  json details = json::object();                ///< subcommand-specific figures
};

}  // namespace gpufeed::bench
