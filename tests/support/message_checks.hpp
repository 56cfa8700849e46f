#pragma once
// Checks on error messages: a token in a message, and the message of the exception nested in a
// sample_error.

#include <exception>
#include <string>
#include <string_view>

namespace gpufeed::test {

/// Whether `text` contains `token` not glued to other digits or letters (so "0" does not match
/// inside "4096" or "0x").
inline bool contains_token(std::string_view text, std::string_view token) {
  auto is_word = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  for (auto pos = text.find(token); pos != std::string_view::npos;
       pos = text.find(token, pos + 1)) {
    bool const left_ok = pos == 0 || !is_word(text[pos - 1]);
    bool const right_ok = pos + token.size() == text.size() || !is_word(text[pos + token.size()]);
    if (left_ok && right_ok) return true;
  }
  return false;
}

/// Rethrows the exception nested in `e` (a sample_error's cause) and returns its message;
/// "<nothing nested>" when there is none, "<non-std>" for a non-std exception.
inline std::string nested_message(std::exception const& e) {
  try {
    std::rethrow_if_nested(e);
  } catch (std::exception const& inner) {
    return inner.what();
  } catch (...) {
    return "<non-std>";
  }
  return "<nothing nested>";
}

}  // namespace gpufeed::test
