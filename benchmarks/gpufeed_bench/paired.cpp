#include "paired.hpp"

#include <ostream>
#include <utility>

#include "summary_stats.hpp"
#include "table.hpp"

namespace gpufeed::bench {

std::vector<double> paired_rates::ratios() const {
  std::vector<double> out;
  for (std::size_t r = 0; r < peer.size() && r < loader.size(); ++r) {
    out.push_back(ratio_or_zero(loader[r], peer[r]));
  }
  return out;
}

double paired_rates::ratio() const {
  return median(ratios());
}

double paired_rates::ratio_of_medians() const {
  return ratio_or_zero(median(loader), median(peer));
}

paired_rates run_pairs(std::size_t repeats, goes_first first, std::function<double()> const& peer,
                       std::function<double()> const& loader, std::string const& peer_name,
                       std::string const& label, std::ostream& progress) {
  paired_rates rates;
  for (std::size_t r = 0; r < repeats; ++r) {
    if (first == goes_first::peer) {
      rates.peer.push_back(peer());
      rates.loader.push_back(loader());
    } else {
      rates.loader.push_back(loader());
      rates.peer.push_back(peer());
    }
    progress << "  " << label << "repeat " << r + 1 << '/' << repeats << ": " << peer_name << ' '
             << format_bandwidth(rates.peer.back()) << "  gpufeed "
             << format_bandwidth(rates.loader.back()) << "  ratio "
             << format_fixed(100.0 * rates.ratios().back(), 1) << " %\n";
  }
  return rates;
}

paired_rows paired_results(paired_rates const& rates, std::string peer_name,
                           std::string loader_name, std::size_t sample_bytes,
                           std::size_t batch_size) {
  auto const row = [&](std::string name, std::vector<double> const& runs) {
    bench_result result;
    result.loader = std::move(name);
    result.bytes_per_s = median(runs);
    result.samples_per_s = *result.bytes_per_s / static_cast<double>(sample_bytes);
    result.batches_per_s = *result.samples_per_s / static_cast<double>(batch_size);
    result.memcpy_bytes_per_s = median(rates.peer);
    result.details = {{"bytes_per_s_runs", runs}};
    return result;
  };
  paired_rows rows{row(std::move(peer_name), rates.peer),
                   row(std::move(loader_name), rates.loader)};
  set_paired_ratio(rows.loader, rates);
  return rows;
}

void set_paired_ratio(bench_result& row, paired_rates const& rates) {
  row.ratio = rates.ratio();
  row.details["ratio_runs"] = rates.ratios();
  row.details["ratio_of_medians"] = rates.ratio_of_medians();
}

goal paired_goal(std::string metric, double target, double median_ratio) {
  return {std::move(metric), ">=", target, median_ratio, statistic::median_of_paired_ratios};
}

goal paired_goal(std::string metric, double target, paired_rates const& rates) {
  return paired_goal(std::move(metric), target, rates.ratio());
}

}  // namespace gpufeed::bench
