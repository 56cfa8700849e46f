#pragma once
// Readable output: aligned text tables and human units.

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/observe/progress.hpp"
#include "json_report.hpp"

namespace gpufeed::bench {

/// A table of text cells; the first column is left-aligned, the others right-aligned.
class text_table {
 public:
  explicit text_table(std::vector<std::string> header);
  void add_row(std::vector<std::string> row);
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;  // rows_[0] is the header
};

/// `value` with `precision` decimals.
[[nodiscard]] std::string format_fixed(double value, int precision);
/// A count per second with an SI prefix: "1.23 M/s".
[[nodiscard]] std::string format_rate(double per_second);
/// Bytes per second in decimal gigabytes: "9.81 GB/s".
[[nodiscard]] std::string format_bandwidth(double bytes_per_second);
/// A byte count in binary units: the library's "512.0 MiB" (gpufeed/observe/progress.hpp).
using gpufeed::format_bytes;
/// The text for an optional figure, "-" where it does not apply.
[[nodiscard]] std::string or_dash(std::optional<std::string> const& text);

/// Prints the report: machine, config, one row per result, then each goal and whether it is met.
void print_report(report const& rep, std::ostream& out);

}  // namespace gpufeed::bench
