#include "table.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <ostream>

namespace gpufeed::bench {

text_table::text_table(std::vector<std::string> header) {
  rows_.push_back(std::move(header));
}

void text_table::add_row(std::vector<std::string> row) {
  row.resize(rows_.front().size());
  rows_.push_back(std::move(row));
}

void text_table::print(std::ostream& out) const {
  std::vector<std::size_t> widths(rows_.front().size(), 0);
  for (auto const& row : rows_) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (auto const& row : rows_) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      std::string const padding(widths[c] - row[c].size(), ' ');
      if (c > 0) out << "  ";
      out << (c == 0 ? row[c] + padding : padding + row[c]);
    }
    out << '\n';
  }
}

std::string format_fixed(double value, int precision) {
  std::array<char, 64> text{};
  std::snprintf(text.data(), text.size(), "%.*f", precision, value);
  return text.data();
}

std::string format_rate(double per_second) {
  if (per_second >= 1e9) return format_fixed(per_second / 1e9, 2) + " G/s";
  if (per_second >= 1e6) return format_fixed(per_second / 1e6, 2) + " M/s";
  if (per_second >= 1e3) return format_fixed(per_second / 1e3, 2) + " k/s";
  return format_fixed(per_second, 1) + " /s";
}

std::string format_bandwidth(double bytes_per_second) {
  return format_fixed(bytes_per_second / 1e9, 2) + " GB/s";
}

std::string or_dash(std::optional<std::string> const& text) {
  return text.value_or("-");
}

namespace {

template <class T, class Format>
std::optional<std::string> map(std::optional<T> const& value, Format format) {
  if (!value) return std::nullopt;
  return format(*value);
}

std::string config_line(json const& config) {
  std::string line;
  for (auto const& [key, value] : config.items()) {
    if (!line.empty()) line += ' ';
    line += key + '=' + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return line;
}

// Grid rows (sweep): one line per cell, its settings first, the best cells marked.
void print_grid(report const& rep, std::ostream& out) {
  // The ratio column only where some row has one (rows not chosen by the grid: --auto).
  bool const ratios = std::any_of(rep.results.begin(), rep.results.end(),
                                  [](bench_result const& r) { return r.ratio.has_value(); });
  std::vector<std::string> header{"",          "batch",     "depth",
                                  "workers",   "samples/s", "batches/s",
                                  "bandwidth", "stall",     "min-max samples/s"};
  if (ratios) header.emplace_back("ratio to best");
  text_table table{std::move(header)};
  for (auto const& r : rep.results) {
    auto const& details = r.details;
    std::string mark = details.value("best", false)                  ? "*"
                       : details.value("best_for_batch_size", false) ? "+"
                                                                     : "";
    if (r.cell && !r.cell->from_grid()) mark = r.cell->chosen_by;
    auto const stall = details.find("stall_fraction");
    auto const spread =
        details.contains("samples_per_s_min") && details.contains("samples_per_s_max")
            ? std::optional<std::string>{format_rate(details["samples_per_s_min"].get<double>()) +
                                         " - " +
                                         format_rate(details["samples_per_s_max"].get<double>())}
            : std::nullopt;
    table.add_row(
        {mark, r.cell ? std::to_string(r.cell->batch_size) : "-",
         r.cell ? std::to_string(r.cell->prefetch_depth) : "-",
         r.cell ? std::to_string(r.cell->workers) : "-", or_dash(map(r.samples_per_s, format_rate)),
         or_dash(map(r.batches_per_s, format_rate)), or_dash(map(r.bytes_per_s, format_bandwidth)),
         stall != details.end() && stall->is_number()
             ? format_fixed(100.0 * stall->get<double>(), 1) + " %"
             : "-",
         or_dash(spread),
         or_dash(map(r.ratio, [](double v) { return format_fixed(v, 2) + "x"; }))});
  }
  table.print(out);
  out << "* best cell (most samples/s), + best of its batch size; stall = time blocked in next() "
         "/ wall time\n";
}

void print_results(report const& rep, std::ostream& out) {
  text_table table{{"loader", "samples/s", "batches/s", "bandwidth", "handoff us", "memcpy peak",
                    "ratio", "peak RSS", "pinned"}};
  for (auto const& r : rep.results) {
    auto const percent = [](double v) { return format_fixed(100.0 * v, 1) + " %"; };
    auto const micros = [](double v) { return format_fixed(v, 3); };
    table.add_row(
        {r.loader, or_dash(map(r.samples_per_s, format_rate)),
         or_dash(map(r.batches_per_s, format_rate)), or_dash(map(r.bytes_per_s, format_bandwidth)),
         or_dash(map(r.handoff_us, micros)), or_dash(map(r.memcpy_bytes_per_s, format_bandwidth)),
         or_dash(map(r.ratio, percent)), or_dash(map(r.peak_rss_bytes, format_bytes)),
         or_dash(map(r.pinned_bytes, format_bytes))});
  }
  table.print(out);
}

void print_goals(report const& rep, std::ostream& out) {
  if (!rep.goals.empty()) out << '\n';
  for (auto const& target : rep.goals) {
    out << "goal: " << target.metric << ' ' << target.comparison << ' '
        << format_fixed(target.target, 2) << "  measured " << format_fixed(target.value, 3)
        << "  -> " << (target.met() ? "MET" : "NOT MET") << '\n';
  }
}

}  // namespace

void print_report(report const& rep, std::ostream& out) {
  out << "\ngpufeed-bench " << rep.command << " on " << rep.machine.cpus << " CPUs"
      << (rep.machine.cpu_model.empty() ? "" : " (" + rep.machine.cpu_model + ")") << ", "
      << (rep.machine.gpu ? "GPU " + *rep.machine.gpu : std::string{"no GPU"}) << ", load "
      << format_fixed(rep.machine.load_average[0], 2) << '\n';
  out << "config: " << config_line(rep.config) << "\n\n";
  bool const grid = std::any_of(rep.results.begin(), rep.results.end(),
                                [](bench_result const& r) { return r.cell.has_value(); });
  if (grid) {
    print_grid(rep, out);
  } else {
    print_results(rep, out);
  }
  print_goals(rep, out);
}

}  // namespace gpufeed::bench
