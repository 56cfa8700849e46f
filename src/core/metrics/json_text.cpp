#include "core/metrics/json_text.hpp"

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <optional>

namespace gpufeed::detail {

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (char const c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void append_json_number(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  out += text;
}

void object_text::key(char const* name) {
  if (!first_) out_ += ',';
  first_ = false;
  out_ += '"';
  out_ += name;  // our own names: nothing to escape
  out_ += "\":";
}

void object_text::number(char const* name, std::optional<double> value) {
  key(name);
  if (!value) {
    out_ += "null";
    return;
  }
  append_json_number(out_, *value);
}

void object_text::fixed(char const* name, std::optional<double> value, int decimals) {
  key(name);
  if (!value || !std::isfinite(*value)) {
    out_ += "null";
    return;
  }
  // Sized first: in fixed notation a large double has hundreds of digits.
  int const length = std::snprintf(nullptr, 0, "%.*f", decimals, *value);
  if (length <= 0) {
    out_ += "null";
    return;
  }
  auto const at = out_.size();
  out_.resize(at + static_cast<std::size_t>(length) + 1);
  std::snprintf(out_.data() + at, static_cast<std::size_t>(length) + 1, "%.*f", decimals, *value);
  out_.resize(at + static_cast<std::size_t>(length));  // drops snprintf's terminating NUL
}

void object_text::integer(char const* name, std::optional<std::uint64_t> value) {
  key(name);
  out_ += value ? std::to_string(*value) : std::string{"null"};
}

void object_text::signed_integer(char const* name, std::int64_t value) {
  key(name);
  out_ += std::to_string(value);
}

void object_text::boolean(char const* name, bool value) {
  key(name);
  out_ += value ? "true" : "false";
}

void object_text::text(char const* name, std::string_view value) {
  key(name);
  append_json_string(out_, value);
}

}  // namespace gpufeed::detail
