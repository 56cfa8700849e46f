#include "gpufeed/observe/progress.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <utility>

#include "gpufeed/loader.hpp"
#include "gpufeed/log.hpp"

namespace gpufeed {

namespace {

constexpr char const* unknown = "n/a";
constexpr std::string_view erase_line = "\r\x1b[K";  // carriage return, erase to end of line

struct binary_unit {
  double size;
  char const* name;
};
constexpr std::array<binary_unit, 4> units{{
    {1024.0 * 1024 * 1024 * 1024, "TiB"},
    {1024.0 * 1024 * 1024, "GiB"},
    {1024.0 * 1024, "MiB"},
    {1024.0, "KiB"},
}};

// The largest unit `bytes` fills at least once; null for bytes.
binary_unit const* unit_of(std::uint64_t bytes) {
  for (auto const& unit : units) {
    if (static_cast<double>(bytes) >= unit.size) return &unit;
  }
  return nullptr;
}

std::string formatted(char const* format, auto... values) {
  std::array<char, 128> text{};
  std::snprintf(text.data(), text.size(), format, values...);
  return text.data();
}

std::string rate_text(double per_s) {
  return formatted(per_s < 100 ? "%.1f" : "%.0f", per_s);
}

void write_all(int fd, std::string_view text) noexcept {
  while (!text.empty()) {
    auto const written = ::write(fd, text.data(), text.size());
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;  // nothing useful to do about a closed terminal
    text.remove_prefix(static_cast<std::size_t>(written));
  }
}

// What happened between `start` and `end`, two snapshots of one loader: since the loader's
// start (a default `stats`) when `start` is null or is not an earlier snapshot of it.
struct stats_span {
  double seconds = 0;
  std::uint64_t samples = 0;
  std::uint64_t skipped = 0;
  double consumer_wait_s = 0;
};

stats_span span_between(stats const* start, stats const& end) {
  static stats const loader_start{};
  bool const earlier = start != nullptr && start->wall_s <= end.wall_s &&
                       start->samples <= end.samples && start->skipped <= end.skipped &&
                       start->consumer_wait_s <= end.consumer_wait_s;
  stats const& origin = earlier ? *start : loader_start;
  return stats_span{.seconds = end.wall_s - origin.wall_s,
                    .samples = end.samples - origin.samples,
                    .skipped = end.skipped - origin.skipped,
                    .consumer_wait_s = end.consumer_wait_s - origin.consumer_wait_s};
}

}  // namespace

progress_position position_of(loader const& loader) {
  auto const state = loader.state();
  return progress_position{.epoch = state.epoch,
                           .batch = state.next_sequence,
                           .batches_per_epoch = loader.batches_per_epoch()};
}

std::string format_bytes(std::uint64_t bytes) {
  auto const* const unit = unit_of(bytes);
  if (unit == nullptr) return std::to_string(bytes) + " B";
  return formatted("%.1f %s", static_cast<double>(bytes) / unit->size, unit->name);
}

std::string format_memory(std::optional<std::uint64_t> used, std::optional<std::uint64_t> total) {
  if (!used) return unknown;
  if (!total) return format_bytes(*used);
  auto const* const unit = unit_of(*total);
  if (unit == nullptr) {
    return std::to_string(*used) + "/" + std::to_string(*total) + " B";
  }
  return formatted("%.1f/%.1f %s", static_cast<double>(*used) / unit->size,
                   static_cast<double>(*total) / unit->size, unit->name);
}

std::string format_percent(std::optional<double> percent) {
  if (!percent) return unknown;
  return formatted(*percent < 10 ? "%.1f%%" : "%.0f%%", *percent);
}

progress_values progress_values_of(stats const& now, stats const* previous,
                                   std::optional<monitor_sample> const& sample,
                                   std::optional<progress_position> position) {
  progress_values values;
  values.position = position;
  // Since `previous` when it is an earlier snapshot of the same loader, else since the start;
  // a `previous` taken at the same time as `now` would leave no time to divide by.
  bool const later = previous != nullptr && previous->wall_s < now.wall_s;
  auto const span = span_between(later ? previous : nullptr, now);
  values.samples_per_s = span.seconds > 0 ? static_cast<double>(span.samples) / span.seconds : 0.0;
  values.stall_fraction = span.seconds > 0 ? span.consumer_wait_s / span.seconds : 0.0;
  if (sample) {
    values.gpu_percent = sample->gpu_percent;
    values.gpu_memory_used = sample->gpu_memory_used;
    values.gpu_memory_total = sample->gpu_memory_total;
    values.cpu_percent = sample->process_cpu_percent;
    values.ram_used = sample->ram_used;
    values.ram_total = sample->ram_total;
  }
  return values;
}

std::string format_progress(progress_values const& values) {
  std::string line;
  if (values.position) {
    auto const& at = *values.position;
    line = "epoch " + std::to_string(at.epoch) + " batch " + std::to_string(at.batch);
    if (at.batches_per_epoch > 0) line += "/" + std::to_string(at.batches_per_epoch);
  } else {
    line = "epoch - batch -";
  }
  line += " | " + rate_text(values.samples_per_s) + " samples/s";
  line += " | stall " + format_percent(100.0 * values.stall_fraction);
  line += " | GPU " + format_percent(values.gpu_percent);
  line += " | VRAM " + format_memory(values.gpu_memory_used, values.gpu_memory_total);
  line += " | CPU " + format_percent(values.cpu_percent);
  line += " | RAM " + format_memory(values.ram_used, values.ram_total);
  return line;
}

epoch_summary epoch_summary_of(std::uint64_t epoch, stats const& end, stats const& start) {
  epoch_summary summary;
  summary.epoch = epoch;
  auto const span = span_between(&start, end);
  summary.samples = span.samples;
  summary.seconds = span.seconds;
  summary.skipped = span.skipped;
  summary.stall_fraction = span.seconds > 0 ? span.consumer_wait_s / span.seconds : 0.0;
  return summary;
}

std::string format_epoch_summary(epoch_summary const& summary) {
  double const per_s =
      summary.seconds > 0 ? static_cast<double>(summary.samples) / summary.seconds : 0.0;
  return "epoch " + std::to_string(summary.epoch) + ": " + std::to_string(summary.samples) +
         " samples in " + formatted("%.1f", summary.seconds) + " s (" + rate_text(per_s) +
         " samples/s), stall " + format_percent(100.0 * summary.stall_fraction) + ", skipped " +
         std::to_string(summary.skipped);
}

progress_line::progress_line(progress_options options) : options_{std::move(options)} {
  tty_ = options_.tty.value_or(::isatty(options_.fd) == 1);
  if (!options_.clock) options_.clock = [] { return std::chrono::steady_clock::now(); };
  last_draw_ = options_.clock();
}

progress_line::~progress_line() {
  if (tty_ && drawn_) {
    try {
      write("\n");
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
    }
  }
}

bool progress_line::due() {
  auto const interval = tty_ ? options_.tty_interval : options_.plain_interval;
  return options_.clock() - last_draw_ >= interval;
}

void progress_line::write(std::string_view text) const {
  if (options_.write) {
    options_.write(text);
  } else {
    write_all(options_.fd, text);
  }
}

void progress_line::draw(std::string line) {
  last_draw_ = options_.clock();
  last_line_ = std::move(line);
  if (tty_) {
    std::string text;
    text.reserve(last_line_.size() + erase_line.size());
    text += '\r';
    text += last_line_;
    text += erase_line.substr(1);  // erase what a longer previous line left
    write(text);
    drawn_ = true;
  } else {
    logger()->info("{}", last_line_);
  }
}

bool progress_line::update(stats const& now, std::optional<monitor_sample> const& sample,
                           std::optional<progress_position> position) {
  if (!due()) return false;
  draw_since_previous(now, sample, position);
  return true;
}

bool progress_line::update(loader const& loader, system_monitor const* monitor) {
  if (!due()) return false;
  std::optional<monitor_sample> sample;
  if (monitor != nullptr) sample = monitor->latest();
  draw_since_previous(loader.snapshot(), sample, position_of(loader));
  return true;
}

void progress_line::draw_since_previous(stats const& now,
                                        std::optional<monitor_sample> const& sample,
                                        std::optional<progress_position> position) {
  draw(format_progress(
      progress_values_of(now, previous_ ? &*previous_ : nullptr, sample, position)));
  previous_ = now;
}

std::string progress_line::end_epoch(stats const& now, std::uint64_t epoch) {
  auto line = format_epoch_summary(epoch_summary_of(epoch, now, epoch_start_));
  epoch_start_ = now;
  if (tty_ && drawn_) {
    write(erase_line);
    drawn_ = false;
  }
  logger()->info("{}", line);
  return line;
}

}  // namespace gpufeed
