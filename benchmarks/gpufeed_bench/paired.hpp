#pragma once
// The paired-repeat harness of `memcpy`, `h2d` and `compare`: each repeat runs the loader and its
// peer (the machine's own copy loop for the same bytes, memcpy_peak.hpp and h2d_peak.hpp, or
// another loader) back to back, so that both see the same state of a noisy machine. A goal is
// judged on the median of the per-repeat ratios, never on the ratio of two medians.

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "json_report.hpp"

namespace gpufeed::bench {

/// The rates of each repeat's two runs (bytes/s or samples/s, the same unit on both sides).
struct paired_rates {
  std::vector<double> peer;
  std::vector<double> loader;
  /// loader / peer of each repeat (0 where the peer measured nothing).
  [[nodiscard]] std::vector<double> ratios() const;
  /// The median of ratios(): what goals are judged on.
  [[nodiscard]] double ratio() const;
  /// median(loader) / median(peer), for comparison only.
  [[nodiscard]] double ratio_of_medians() const;
};

/// Which run of a pair goes first (memcpy's peak replays the loader run just before it).
enum class goes_first : std::uint8_t { peer, loader };

/// Runs `repeats` pairs, each `peer()` and `loader()` in the order `first` says (each returns
/// its run's bytes/s), and prints one line per pair to `progress`, starting with `label`.
[[nodiscard]] paired_rates run_pairs(std::size_t repeats, goes_first first,
                                     std::function<double()> const& peer,
                                     std::function<double()> const& loader,
                                     std::string const& peer_name, std::string const& label,
                                     std::ostream& progress);

/// The peer's row and the loader's row of paired byte rates: bytes/s, samples/s and batches/s
/// (medians), every repeat's bytes/s, the peer's median as memcpy_bytes_per_s, and on the
/// loader's row ratio = rates.ratio() with ratio_runs and ratio_of_medians in its details.
struct paired_rows {
  bench_result peer;
  bench_result loader;
};
[[nodiscard]] paired_rows paired_results(paired_rates const& rates, std::string peer_name,
                                         std::string loader_name, std::size_t sample_bytes,
                                         std::size_t batch_size);

/// Sets `row.ratio` to rates.ratio(), with ratio_runs and ratio_of_medians in its details.
void set_paired_ratio(bench_result& row, paired_rates const& rates);

/// `metric` >= `target` on `median_ratio`, the median of the paired ratios.
[[nodiscard]] goal paired_goal(std::string metric, double target, double median_ratio);
/// As above, on rates.ratio().
[[nodiscard]] goal paired_goal(std::string metric, double target, paired_rates const& rates);

}  // namespace gpufeed::bench
