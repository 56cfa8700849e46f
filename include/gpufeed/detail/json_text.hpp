#pragma once
// Minimal JSON text output for the stats line and the trace (no dependency in the library).

#include <string>
#include <string_view>

namespace gpufeed::detail {

/// Appends `text` as a JSON string: quoted, with `"`, `\` and control characters escaped
/// (bytes >= 0x80 pass through, so UTF-8 stays UTF-8).
void append_json_string(std::string& out, std::string_view text);
/// Appends `value` as a JSON number (up to 9 significant digits); NaN and infinities, which
/// JSON cannot hold, as null.
void append_json_number(std::string& out, double value);

}  // namespace gpufeed::detail
