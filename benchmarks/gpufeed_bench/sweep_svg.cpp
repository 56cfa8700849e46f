#include "sweep_svg.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "table.hpp"

namespace gpufeed::bench {
namespace {

// Colour-blind-safe palette (Okabe-Ito), one colour per prefetch depth.
constexpr std::array<char const*, 8> palette = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                                "#56B4E9", "#D55E00", "#F0E442", "#000000"};

constexpr double panel_width = 280;
constexpr double panel_height = 180;
constexpr double panel_gap = 40;
constexpr double left = 80;
constexpr double right = 20;
constexpr double top = 130;
constexpr double row_gap = 70;
constexpr double bottom = 50;
constexpr double x_pad = 24;

std::string escape(std::string const& text) {
  std::string out;
  for (char const c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string num(double value) {
  return format_fixed(value, 1);
}

// A round upper bound and tick step (1, 2 or 5 x 10^k) giving 4 to 8 ticks.
std::pair<double, double> nice_axis(double max_value) {
  if (max_value <= 0) return {1, 0.25};
  double const raw = max_value / 5;
  double const power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double const m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (raw <= step) break;
  }
  return {std::ceil(max_value / step) * step, step};
}

// "120k", "1.5M": tick labels of a rate axis.
std::string short_count(double value) {
  auto const trim = [](double v) {
    std::string text = format_fixed(v, 2);
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
    return text;
  };
  if (value >= 1e9) return trim(value / 1e9) + "G";
  if (value >= 1e6) return trim(value / 1e6) + "M";
  if (value >= 1e3) return trim(value / 1e3) + "k";
  return trim(value);
}

class svg_text {
 public:
  void line(double x1, double y1, double x2, double y2, std::string const& stroke, double width = 1,
            std::string const& extra = {}) {
    out_ << "<line x1=\"" << num(x1) << "\" y1=\"" << num(y1) << "\" x2=\"" << num(x2) << "\" y2=\""
         << num(y2) << "\" stroke=\"" << stroke << "\" stroke-width=\"" << width << '"' << extra
         << "/>\n";
  }
  void text(double x, double y, std::string const& content, std::string const& attributes) {
    out_ << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" " << attributes << '>'
         << escape(content) << "</text>\n";
  }
  void raw(std::string const& element) { out_ << element << '\n'; }
  [[nodiscard]] std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

}  // namespace

std::string sweep_svg(sweep_chart const& chart) {
  std::set<std::size_t> batch_sizes;
  std::set<unsigned> workers;
  std::set<std::size_t> depths;
  double max_rate = 0;
  for (auto const& p : chart.points) {
    batch_sizes.insert(p.cell.batch_size);
    workers.insert(p.cell.workers);
    if (p.cell.from_grid()) depths.insert(p.cell.prefetch_depth);
    max_rate = std::max({max_rate, p.samples_per_s, p.samples_per_s_max});
  }
  std::size_t const columns = std::max<std::size_t>(1, batch_sizes.size());
  double const width = std::max(760.0, left + static_cast<double>(columns) * panel_width +
                                           static_cast<double>(columns - 1) * panel_gap + right);
  double const height = top + 2 * panel_height + row_gap + bottom;
  // Headroom above the highest bar, for the best cell's label.
  auto const [rate_top, rate_step] = nice_axis(1.12 * max_rate);

  std::map<unsigned, std::size_t> worker_index;
  for (auto const w : workers) worker_index.emplace(w, worker_index.size());
  std::map<std::size_t, std::size_t> depth_index;
  for (auto const d : depths) depth_index.emplace(d, depth_index.size());
  auto const colour = [&](std::size_t depth) {
    auto const at = depth_index.find(depth);
    return std::string{palette[(at == depth_index.end() ? 0 : at->second) % palette.size()]};
  };

  svg_text svg;
  svg.raw("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" +
          num(height) + "\" viewBox=\"0 0 " + num(width) + ' ' + num(height) +
          "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">");
  svg.raw("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
  svg.text(20, 24, chart.title, "font-size=\"16\" font-weight=\"bold\"");
  double line_y = 44;
  for (auto const& line : chart.subtitle) {
    svg.text(20, line_y, line, "fill=\"#444\"");
    line_y += 16;
  }

  // Legend: one swatch per prefetch depth, then the best-cell marker.
  double x = 20;
  svg.text(x, 100, "prefetch depth:", "");
  x += 95;
  for (auto const d : depths) {
    svg.line(x, 96, x + 22, 96, colour(d), 2.5);
    svg.raw("<circle cx=\"" + num(x + 11) + "\" cy=\"96\" r=\"3.5\" fill=\"" + colour(d) + "\"/>");
    svg.text(x + 27, 100, std::to_string(d), "");
    x += 50;
  }
  svg.raw("<circle cx=\"" + num(x + 10) +
          "\" cy=\"96\" r=\"8\" fill=\"none\" stroke=\"#000\" "
          "stroke-width=\"1.5\"/>");
  svg.text(x + 23, 100, "best cell (most samples/s)", "");

  std::size_t column = 0;
  for (auto const batch_size : batch_sizes) {
    double const px = left + static_cast<double>(column) * (panel_width + panel_gap);
    auto const x_of = [&](unsigned w) {
      if (workers.size() <= 1) return px + panel_width / 2;
      return px + x_pad +
             static_cast<double>(worker_index.at(w)) * (panel_width - 2 * x_pad) /
                 static_cast<double>(workers.size() - 1);
    };
    for (int row = 0; row < 2; ++row) {
      double const py = top + row * (panel_height + row_gap);
      bool const rates = row == 0;
      double const y_max = rates ? rate_top : 1.0;
      double const y_step = rates ? rate_step : 0.25;
      auto const y_of = [&](double v) { return py + panel_height * (1 - v / y_max); };

      // Frame, horizontal grid lines and y tick labels (on the first column only).
      for (double v = 0; v <= y_max + y_step / 2; v += y_step) {
        svg.line(px, y_of(v), px + panel_width, y_of(v), "#e5e5e5");
        if (column == 0) {
          svg.text(px - 6, y_of(v) + 4, rates ? short_count(v) : format_fixed(100 * v, 0) + " %",
                   "text-anchor=\"end\" fill=\"#333\"");
        }
      }
      svg.raw("<rect x=\"" + num(px) + "\" y=\"" + num(py) + "\" width=\"" + num(panel_width) +
              "\" height=\"" + num(panel_height) + "\" fill=\"none\" stroke=\"#888\"/>");
      for (auto const w : workers) {
        svg.line(x_of(w), py + panel_height, x_of(w), py + panel_height + 5, "#888");
        svg.text(x_of(w), py + panel_height + 18, std::to_string(w),
                 "text-anchor=\"middle\" fill=\"#333\"");
      }
      svg.text(px + panel_width / 2, py + panel_height + 34, "workers", "text-anchor=\"middle\"");
      if (rates) {
        svg.text(px + panel_width / 2, py - 8, "batch size " + std::to_string(batch_size),
                 "text-anchor=\"middle\" font-weight=\"bold\"");
      }
      if (column == 0) {
        double const cy = py + panel_height / 2;
        svg.text(left - 58, cy, rates ? "samples/s (median)" : "stall fraction (time in next())",
                 "text-anchor=\"middle\" transform=\"rotate(-90 " + num(left - 58) + ' ' + num(cy) +
                     ")\"");
      }

      // One line per depth, points in worker order.
      for (auto const d : depths) {
        std::string points;
        for (auto const& p : chart.points) {
          if (!p.cell.from_grid() || p.cell.batch_size != batch_size || p.cell.prefetch_depth != d)
            continue;
          double const v = rates ? p.samples_per_s : p.stall_fraction;
          points += num(x_of(p.cell.workers)) + ',' + num(y_of(v)) + ' ';
        }
        if (!points.empty()) {
          svg.raw("<polyline fill=\"none\" stroke=\"" + colour(d) +
                  "\" stroke-width=\"2\" points=\"" + points + "\"/>");
        }
      }
      for (auto const& p : chart.points) {
        if (p.cell.batch_size != batch_size) continue;
        double const cx = x_of(p.cell.workers);
        double const v = rates ? p.samples_per_s : p.stall_fraction;
        if (rates && p.samples_per_s_max > p.samples_per_s_min) {
          svg.line(cx, y_of(p.samples_per_s_min), cx, y_of(p.samples_per_s_max),
                   colour(p.cell.prefetch_depth), 1, " opacity=\"0.6\"");
        }
        if (p.cell.from_grid()) {
          svg.raw("<circle cx=\"" + num(cx) + "\" cy=\"" + num(y_of(v)) + "\" r=\"3.5\" fill=\"" +
                  colour(p.cell.prefetch_depth) + "\"><title>batch " +
                  std::to_string(p.cell.batch_size) + ", depth " +
                  std::to_string(p.cell.prefetch_depth) + ", workers " +
                  std::to_string(p.cell.workers) + ": " + short_count(p.samples_per_s) +
                  " samples/s, stall " + format_fixed(100 * p.stall_fraction, 1) +
                  " %</title></circle>");
        } else {
          double const cy = y_of(v);
          svg.raw("<path d=\"M" + num(cx) + ' ' + num(cy - 7) + " L" + num(cx + 7) + ' ' + num(cy) +
                  " L" + num(cx) + ' ' + num(cy + 7) + " L" + num(cx - 7) + ' ' + num(cy) +
                  " Z\" fill=\"none\" stroke=\"#000\" stroke-width=\"1.5\"/>");
        }
        if (p.best) {
          svg.raw("<circle cx=\"" + num(cx) + "\" cy=\"" + num(y_of(v)) +
                  "\" r=\"8\" fill=\"none\" stroke=\"#000\" stroke-width=\"1.5\"/>");
          if (rates) {
            svg.text(cx, y_of(v) - 12,
                     "best: " + short_count(p.samples_per_s) + "/s, depth " +
                         std::to_string(p.cell.prefetch_depth),
                     "text-anchor=\"middle\" font-size=\"11\"");
          }
        }
      }
    }
    ++column;
  }
  svg.raw("</svg>");
  return svg.str();
}

void write_sweep_svg(sweep_chart const& chart, std::string const& path) {
  std::ofstream out{path};
  if (!out) throw std::runtime_error{"cannot open '" + path + "' for writing"};
  out << sweep_svg(chart);
  if (!out.flush()) throw std::runtime_error{"cannot write '" + path + "'"};
}

}  // namespace gpufeed::bench
