#pragma once
// text_log_capture: log_capture (support/log_capture.hpp) behind a header without spdlog, for
// suites whose translation units include torch's headers: a pip torch's bundled fmt and the
// external fmt Debian's spdlog is built with do not compile in one unit. The suite links the
// gpufeed_text_log_capture library, which is built without torch's include directories.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace gpufeed::test {

class log_capture;

class text_log_capture {
 public:
  /// Leaves gpufeed's log level as it is.
  text_log_capture();
  /// Sets gpufeed's log level to `level` first.
  explicit text_log_capture(std::string const& level);
  ~text_log_capture();
  text_log_capture(text_log_capture const&) = delete;
  text_log_capture& operator=(text_log_capture const&) = delete;

  /// The messages so far, oldest first.
  [[nodiscard]] std::vector<std::string> lines() const;
  /// How many of the messages contain `text`.
  [[nodiscard]] std::size_t count(std::string const& text) const;

 private:
  std::unique_ptr<log_capture> capture_;
};

}  // namespace gpufeed::test
