#include "python/bindings/python_terms.hpp"

#include <array>
#include <cctype>
#include <cstddef>
#include <utility>

namespace gpufeed::python {

namespace {

constexpr std::string_view options_prefix = "loader_options::";
constexpr std::string_view stats_prefix = "stats::";  // stats::NAME(): a figure of loader.stats()

// The C++ options whose Python argument has another name.
constexpr std::array<std::pair<std::string_view, std::string_view>, 2> renamed{{
    {"workers", "num_workers"},
    {"target", "device"},
}};

// C++ values and their Python spelling.
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> values{{
    {"placement::cuda", "'cuda'"},
    {"placement::host", "None"},
    {"gpufeed::auto_depth", "'auto'"},
    {"staging_memory::pinned", "'pinned'"},
    {"staging_memory::pageable", "'pageable'"},
    {"sample_error::failures()", "SampleError.failures"},
}};

// A failed precondition ends its message with " [CONDITION failed at FILE:LINE]": the C++
// developer's clue, not the Python user's.
std::string_view without_source_location(std::string_view message) {
  auto const open = message.rfind(" [");
  if (open == std::string_view::npos || !message.ends_with(']') ||
      message.find(" failed at ", open) == std::string_view::npos) {
    return message;
  }
  return message.substr(0, open);
}

std::string_view python_name(std::string_view name) {
  for (auto const& [cpp, py] : renamed) {
    if (name == cpp) return py;
  }
  return name;
}

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.';
}

}  // namespace

std::string in_python_terms(std::string_view message) {
  message = without_source_location(message);
  std::string out;
  out.reserve(message.size());
  std::size_t i = 0;
  while (i < message.size()) {
    auto const rest = message.substr(i);
    if (rest.starts_with(options_prefix)) {
      auto end = options_prefix.size();
      while (end < rest.size() && name_char(rest[end])) ++end;
      // A sentence's full stop after the name is not part of it.
      while (end > options_prefix.size() && rest[end - 1] == '.') --end;
      out += python_name(rest.substr(options_prefix.size(), end - options_prefix.size()));
      i += end;
      if (message.substr(i).starts_with(" = ")) {  // NAME = V reads NAME=V
        out += '=';
        i += 3;
      }
      continue;
    }
    if (rest.starts_with(stats_prefix) &&
        (i == 0 || (!name_char(message[i - 1]) && message[i - 1] != ':'))) {
      auto end = stats_prefix.size();
      while (end < rest.size() && name_char(rest[end])) ++end;
      auto const name = rest.substr(stats_prefix.size(), end - stats_prefix.size());
      if (!name.empty() && rest.substr(end).starts_with("()")) {
        out += "loader.stats()['";
        out += name;
        out += "']";
        i += end + 2;
        continue;
      }
    }
    bool replaced = false;
    for (auto const& [cpp, py] : values) {
      if (rest.starts_with(cpp)) {
        out += py;
        i += cpp.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += message[i++];
  }
  return out;
}

}  // namespace gpufeed::python
