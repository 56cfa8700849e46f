#include "gpufeed/observe/proc_stat.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>

namespace gpufeed::observe {

namespace {

constexpr std::string_view blanks = " \t";

// Splits off the next blank-separated token of `text`; empty at the end (or at a newline).
std::string_view next_token(std::string_view& text) {
  auto const begin = text.find_first_not_of(blanks);
  if (begin == std::string_view::npos || text[begin] == '\n') {
    text = {};
    return {};
  }
  text.remove_prefix(begin);
  auto end = text.find_first_of(" \t\n");
  if (end == std::string_view::npos) end = text.size();
  auto const token = text.substr(0, end);
  text.remove_prefix(end);
  return token;
}

std::optional<std::uint64_t> to_number(std::string_view token) {
  std::uint64_t value = 0;
  auto const* const last = token.data() + token.size();
  auto const [end, error] = std::from_chars(token.data(), last, value);
  if (token.empty() || error != std::errc{} || end != last) return std::nullopt;
  return value;
}

// The line of `text` that starts with `prefix`, without the prefix and the newline.
std::optional<std::string_view> line_starting(std::string_view text, std::string_view prefix) {
  std::size_t at = 0;
  while (at < text.size()) {
    auto end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    auto const line = text.substr(at, end - at);
    if (line.starts_with(prefix)) return line.substr(prefix.size());
    at = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<process_cpu_ticks> parse_process_stat(std::string_view text) {
  auto const close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  text.remove_prefix(close + 1);
  // Fields 3 (state) to 13 come before utime (14) and stime (15).
  constexpr int skipped = 11;
  for (int i = 0; i < skipped; ++i) {
    if (next_token(text).empty()) return std::nullopt;
  }
  auto const user = to_number(next_token(text));
  auto const system = to_number(next_token(text));
  if (!user || !system) return std::nullopt;
  return process_cpu_ticks{.user = *user, .system = *system};
}

std::optional<system_cpu_ticks> parse_system_stat(std::string_view text) {
  auto const line = line_starting(text, "cpu ");
  if (!line) return std::nullopt;
  auto rest = *line;
  // user nice system idle iowait irq softirq steal guest guest_nice; kernels before 2.6.33
  // write fewer, so only the first four are required.
  std::array<std::uint64_t, 8> value{};
  std::size_t count = 0;
  for (; count < value.size(); ++count) {
    auto const token = next_token(rest);
    if (token.empty()) break;
    auto const number = to_number(token);
    if (!number) return std::nullopt;
    value[count] = *number;
  }
  if (count < 4) return std::nullopt;
  enum { user, nice, system, idle, iowait, irq, softirq, steal };
  return system_cpu_ticks{.busy = value[user] + value[nice] + value[system] + value[irq] +
                                  value[softirq] + value[steal],
                          .idle = value[idle] + value[iowait]};
}

std::optional<std::uint64_t> parse_statm_resident_pages(std::string_view text) {
  if (next_token(text).empty()) return std::nullopt;  // size
  return to_number(next_token(text));
}

std::optional<std::uint64_t> parse_kb_field(std::string_view text, std::string_view key) {
  std::string prefix{key};
  prefix += ':';
  auto line = line_starting(text, prefix);
  if (!line) return std::nullopt;
  auto const value = to_number(next_token(*line));
  if (!value) return std::nullopt;
  auto const unit = next_token(*line);
  if (unit.empty()) return value;
  if (unit == "kB") return *value * 1024;
  return std::nullopt;
}

std::optional<std::uint64_t> parse_status_rss_bytes(std::string_view text) {
  return parse_kb_field(text, "VmRSS");
}

std::optional<memory_info> parse_meminfo(std::string_view text) {
  auto const total = parse_kb_field(text, "MemTotal");
  if (!total) return std::nullopt;
  auto available = parse_kb_field(text, "MemAvailable");
  if (!available) {
    auto const free = parse_kb_field(text, "MemFree");
    auto const buffers = parse_kb_field(text, "Buffers");
    auto const cached = parse_kb_field(text, "Cached");
    if (!free || !buffers || !cached) return std::nullopt;
    available = *free + *buffers + *cached;
  }
  return memory_info{.total = *total, .available = *available};
}

double cpu_percent(std::uint64_t ticks, double wall_s, long ticks_per_s) noexcept {
  if (wall_s <= 0 || ticks_per_s <= 0) return 0;
  return 100.0 * static_cast<double>(ticks) / static_cast<double>(ticks_per_s) / wall_s;
}

std::optional<double> system_cpu_percent(system_cpu_ticks const& before,
                                         system_cpu_ticks const& after) noexcept {
  if (after.busy < before.busy || after.idle < before.idle || after.total() <= before.total()) {
    return std::nullopt;
  }
  return 100.0 * static_cast<double>(after.busy - before.busy) /
         static_cast<double>(after.total() - before.total());
}

std::optional<std::string> read_proc_file(char const* path, std::size_t max_bytes) {
  int const fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  std::array<char, 4096> buffer;  // NOLINT(cppcoreguidelines-pro-type-member-init): read fills it
  bool failed = false;
  while (text.size() < max_bytes) {
    auto const want = std::min(buffer.size(), max_bytes - text.size());
    auto const got = ::read(fd, buffer.data(), want);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) failed = true;
    if (got <= 0) break;
    text.append(buffer.data(), static_cast<std::size_t>(got));
  }
  ::close(fd);
  if (failed) return std::nullopt;
  return text;
}

}  // namespace gpufeed::observe
