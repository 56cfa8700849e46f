#include "chart.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace train_classifier {
namespace {

using namespace chart_layout;

std::string escaped(std::string const& text) {
  std::string out;
  for (char const c : text) {
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else {
      out += c;
    }
  }
  return out;
}

std::string fixed(double value, int decimals) {
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.*f", decimals, value);
  return text.data();
}

// A round upper bound for an axis: 1, 2 or 5 times a power of ten.
double nice_ceiling(double value) {
  if (value <= 0) return 1;
  double const power = std::pow(10.0, std::floor(std::log10(value)));
  for (double const m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= value) return m * power;
  }
  return 10 * power;
}

void text(std::ostream& out, double x, double y, std::string const& content,
          char const* anchor = "start", int size = 12, char const* colour = "#222") {
  out << "<text x=\"" << fixed(x, 1) << "\" y=\"" << fixed(y, 1) << "\" font-size=\"" << size
      << "\" text-anchor=\"" << anchor << "\" fill=\"" << colour << "\">" << escaped(content)
      << "</text>\n";
}

void line(std::ostream& out, double x1, double y1, double x2, double y2, char const* colour,
          double stroke = 1) {
  out << "<line x1=\"" << fixed(x1, 1) << "\" y1=\"" << fixed(y1, 1) << "\" x2=\"" << fixed(x2, 1)
      << "\" y2=\"" << fixed(y2, 1) << "\" stroke=\"" << colour << "\" stroke-width=\""
      << fixed(stroke, 1) << "\"/>\n";
}

// One panel: axes from (x0, y0) (top left) of the plot area, the run's series.
void panel(std::ostream& out, run_result const& run, double y0, double max_t, double max_rate) {
  double const plot_w = width - left - right;
  double const x0 = left;
  auto const px = [&](double t) { return x0 + plot_w * t / max_t; };
  auto const py_rate = [&](double r) { return y0 + panel_height * (1 - r / max_rate); };
  auto const py_share = [&](double s) { return y0 + panel_height * (1 - s); };

  text(out, x0, y0 - 10,
       run.feed + ": " + fixed(run.samples_per_s(), 0) + " samples/s, data wait " +
           fixed(100 * run.wait_share(), 1) + "% over " + fixed(run.train_seconds, 1) + " s",
       "start", 14, "#000");
  out << "<rect x=\"" << x0 << "\" y=\"" << fixed(y0, 1) << "\" width=\"" << plot_w
      << "\" height=\"" << panel_height << "\" fill=\"#fafafa\" stroke=\"#bbb\"/>\n";
  for (int i = 0; i <= 4; ++i) {  // grid: quarters of both axes
    double const y = y0 + panel_height * i / 4.0;
    line(out, x0, y, x0 + plot_w, y, "#e4e4e4");
    text(out, x0 - 6, y + 4, fixed(max_rate * (4 - i) / 4.0, 0), "end", 11, rate_colour);
    text(out, x0 + plot_w + 6, y + 4, fixed(25.0 * (4 - i), 0) + "%", "start", 11, wait_colour);
  }
  double const tick = nice_ceiling(max_t / 6);
  for (double t = 0; t <= max_t + 1e-9; t += tick) {
    line(out, px(t), y0 + panel_height, px(t), y0 + panel_height + 4, "#888");
    text(out, px(t), y0 + panel_height + 16, fixed(t, tick < 1 ? 1 : 0) + " s", "middle", 11);
  }
  double epoch_end = 0;  // each epoch's end, dotted: the loaders restart there
  for (std::size_t e = 0; e + 1 < run.epoch_measures.size(); ++e) {
    epoch_end += run.epoch_measures[e].wall_s;
    out << "<line x1=\"" << fixed(px(epoch_end), 1) << "\" y1=\"" << fixed(y0, 1) << "\" x2=\""
        << fixed(px(epoch_end), 1) << "\" y2=\"" << fixed(y0 + panel_height, 1)
        << "\" stroke=\"#999\" stroke-dasharray=\"3,3\"/>\n";
  }
  auto const series = [&](auto&& value, auto&& y_of, char const* colour, double stroke) {
    std::ostringstream points;
    bool any = false;
    double last_t = 0;
    for (auto const& p : run.pace) {
      auto const v = value(p);
      if (!v) continue;
      if (!any) points << fixed(px(last_t), 1) << ',' << fixed(y_of(*v), 1) << ' ';
      points << fixed(px(p.t_s), 1) << ',' << fixed(y_of(*v), 1) << ' ';
      last_t = p.t_s;
      any = true;
    }
    if (any) {
      out << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"" << stroke
          << "\" points=\"" << points.str() << "\"/>\n";
    }
  };
  series([](pace_sample const& p) { return std::optional<double>{p.samples_per_s}; }, py_rate,
         rate_colour, 2);
  series([](pace_sample const& p) { return std::optional<double>{p.wait_share}; }, py_share,
         wait_colour, 1.5);
  series(
      [](pace_sample const& p) {
        return p.gpu_percent ? std::optional<double>{*p.gpu_percent / 100} : std::nullopt;
      },
      py_share, gpu_colour, 1.5);
}

}  // namespace

void write_chart(std::filesystem::path const& path, std::vector<run_result> const& runs,
                 std::string const& caption) {
  double max_t = 0;
  double max_rate = 0;
  bool gpu = false;
  for (auto const& run : runs) {
    max_t = std::max(max_t, run.train_seconds);
    for (auto const& p : run.pace) {
      max_rate = std::max(max_rate, p.samples_per_s);
      gpu = gpu || p.gpu_percent.has_value();
    }
  }
  max_t = max_t > 0 ? max_t : 1;
  max_rate = nice_ceiling(max_rate * 1.05);
  double const height = top + static_cast<double>(runs.size()) * panel_height +
                        static_cast<double>(runs.size() > 0 ? runs.size() - 1 : 0) * gap + bottom;

  std::ofstream out{path};
  if (!out) throw std::runtime_error{"cannot write " + path.string()};
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\""
      << fixed(height, 0) << "\" viewBox=\"0 0 " << width << ' ' << fixed(height, 0)
      << "\" font-family=\"sans-serif\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  text(out, left, 20,
       "train_classifier: the same training fed by each loader (each panel: its own training "
       "time)",
       "start", 15, "#000");
  double legend_x = left;
  auto const legend = [&](char const* colour, std::string const& label) {
    line(out, legend_x, 36, legend_x + 22, 36, colour, 3);
    text(out, legend_x + 28, 40, label, "start", 12);
    legend_x += 40 + 7.0 * static_cast<double>(label.size());
  };
  legend(rate_colour, "samples/s (left axis)");
  legend(wait_colour, "data-wait share (right axis)");
  if (gpu) legend(gpu_colour, "GPU utilization (right axis)");
  text(out, legend_x, 40, "dotted: epoch ends", "start", 12, "#777");
  double y = first_panel_top;
  for (auto const& run : runs) {
    panel(out, run, y, max_t, max_rate);
    y += panel_height + gap;
  }
  text(out, left, height - 14, caption, "start", 11, "#555");
  out << "</svg>\n";
  if (!out) throw std::runtime_error{"cannot write " + path.string()};
}

}  // namespace train_classifier
