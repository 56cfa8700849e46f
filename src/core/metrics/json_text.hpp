#pragma once
// Minimal JSON text output for the stats line, the monitor's samples and the trace (no dependency
// in the library).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpufeed::detail {

/// Appends `text` as a JSON string: quoted, with `"`, `\` and control characters escaped
/// (bytes >= 0x80 pass through, so UTF-8 stays UTF-8).
void append_json_string(std::string& out, std::string_view text);
/// Appends `value` as a JSON number (up to 9 significant digits); NaN and infinities, which
/// JSON cannot hold, as null.
void append_json_number(std::string& out, double value);

/// Writes one JSON object into a string: `{` on construction, `}` on destruction, and a field
/// per call in between. Keys are the caller's own names, written unescaped. An empty optional,
/// NaN or an infinity is written as null.
class object_text {
 public:
  explicit object_text(std::string& out) : out_{out} { out_ += '{'; }
  object_text(object_text const&) = delete;
  object_text& operator=(object_text const&) = delete;
  object_text(object_text&&) = delete;
  object_text& operator=(object_text&&) = delete;
  ~object_text() { out_ += '}'; }

  /// `"name":`, after a comma unless it is the first field; the value (e.g. a nested
  /// object_text on `out()`) follows.
  void key(char const* name);
  /// A number with up to 9 significant digits (append_json_number).
  void number(char const* name, std::optional<double> value);
  /// A number with `decimals` digits after the point, never in exponent form (a Unix time,
  /// fixed-width columns).
  void fixed(char const* name, std::optional<double> value, int decimals);
  void integer(char const* name, std::optional<std::uint64_t> value);
  void signed_integer(char const* name, std::int64_t value);
  void boolean(char const* name, bool value);
  void text(char const* name, std::string_view value);
  [[nodiscard]] std::string& out() noexcept { return out_; }

 private:
  std::string& out_;
  bool first_ = true;
};

}  // namespace gpufeed::detail
