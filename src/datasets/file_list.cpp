#include "gpufeed/datasets/file_list.hpp"

#include <charconv>
#include <fstream>
#include <optional>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "gpufeed/error.hpp"

namespace gpufeed {

namespace fs = std::filesystem;

namespace {

std::string_view trim(std::string_view s) noexcept {
  auto const first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  auto const last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

// Splits one CSV line into fields; quoted fields may hold commas and "" for a quote.
// Returns an error message instead when the quoting is broken.
std::variant<std::vector<std::string>, std::string> split_row(std::string_view line) {
  std::vector<std::string> fields;
  std::size_t pos = 0;
  while (true) {
    auto const rest = line.substr(pos);
    auto const lead = rest.find_first_not_of(" \t");
    if (lead != std::string_view::npos && rest[lead] == '"') {
      std::string value;
      std::size_t i = pos + lead + 1;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            value += '"';
            i += 2;
            continue;
          }
          closed = true;
          ++i;
          break;
        }
        value += line[i++];
      }
      if (!closed) return std::string{"unterminated quoted field"};
      auto const after = line.find(',', i);
      if (!trim(line.substr(i, after == std::string_view::npos ? line.npos : after - i)).empty()) {
        return std::string{"text after a closing quote"};
      }
      fields.push_back(std::move(value));
      if (after == std::string_view::npos) break;
      pos = after + 1;
    } else {
      auto const comma = rest.find(',');
      fields.emplace_back(trim(rest.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      pos += comma + 1;
    }
  }
  return fields;
}

std::optional<std::int64_t> parse_label(std::string_view text) noexcept {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  std::int64_t value = 0;
  auto const* end = text.data() + text.size();
  auto const [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

// Whether a field is meant as a number (digits, an optional sign): such a first row is data,
// even when the number does not fit, so that it is reported instead of skipped as a header.
bool looks_numeric(std::string_view text) noexcept {
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) text.remove_prefix(1);
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

file_list::file_list(fs::path const& csv, image_options options) : pipeline_{options} {
  std::ifstream in{csv, std::ios::binary};
  if (!in) throw file_error(csv.string(), "cannot open the file list");
  auto const base = csv.parent_path();
  std::string line;
  std::size_t number = 0;
  bool first_row = true;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);  // UTF-8 BOM
    if (trim(line).empty()) continue;
    auto const where = "line " + std::to_string(number) + ": ";
    auto split = split_row(line);
    if (auto const* message = std::get_if<std::string>(&split)) {
      throw file_error(csv.string(), where + *message);
    }
    auto const& fields = std::get<std::vector<std::string>>(split);
    if (fields.size() != 2) {
      throw file_error(csv.string(), where + "expected 2 fields (path,label), found " +
                                         std::to_string(fields.size()));
    }
    auto const label = parse_label(fields[1]);
    bool const header = first_row && !looks_numeric(fields[1]);
    first_row = false;
    if (header) continue;
    if (!label) {
      throw file_error(csv.string(),
                       where + "the label '" + fields[1] + "' is not a 64-bit integer");
    }
    if (fields[0].empty()) throw file_error(csv.string(), where + "the path is empty");
    fs::path path{fields[0]};
    if (path.is_relative()) path = base / path;
    entries_.push_back(image_entry{path.string(), *label});
  }
  if (in.bad()) throw file_error(csv.string(), "error while reading the file list");
  if (entries_.empty()) throw file_error(csv.string(), "lists no images");
}

sample_spec file_list::spec() const {
  return detail::labelled_image_spec(pipeline_);
}

void file_list::read(std::size_t index, sample_view out, read_context const& ctx) const {
  detail::read_labelled_image(pipeline_, entries_, index, out, ctx, "file_list");
}

}  // namespace gpufeed
