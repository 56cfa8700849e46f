#include "gpufeed/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <string>

#include "gpufeed/error.hpp"

namespace gpufeed {

namespace {
spdlog::level::level_enum parse_level(std::string_view name) {
  auto const level = spdlog::level::from_str(std::string{name});
  // from_str answers "off" for anything it does not know; accept "off" only when asked for.
  GPUFEED_EXPECTS(level != spdlog::level::off || name == "off",
                  "unknown log level '" + std::string{name} +
                      "'; use trace, debug, info, warn, error, critical or off");
  return level;
}

spdlog::level::level_enum spdlog_level(log_level level) {
  switch (level) {
    case log_level::trace:
      return spdlog::level::trace;
    case log_level::debug:
      return spdlog::level::debug;
    case log_level::info:
      return spdlog::level::info;
    case log_level::warn:
      return spdlog::level::warn;
    case log_level::error:
      return spdlog::level::err;
    case log_level::critical:
      return spdlog::level::critical;
  }
  return spdlog::level::critical;
}

std::shared_ptr<spdlog::logger> make_logger() {
  if (auto existing = spdlog::get("gpufeed")) {
    return existing;
  }
  auto made = spdlog::stderr_color_mt("gpufeed");
  made->set_pattern("[%H:%M:%S.%e] [gpufeed] [%^%l%$] %v");
  made->set_level(spdlog::level::warn);  // quiet, as torch's loaders are: the plan is at info
  if (char const* env = std::getenv("GPUFEED_LOG_LEVEL"); env != nullptr && *env != '\0') {
    try {
      made->set_level(parse_level(env));
    } catch (logic_error const& e) {
      made->warn("GPUFEED_LOG_LEVEL ignored: {}", e.what());
    }
  }
  return made;
}
}  // namespace

std::shared_ptr<spdlog::logger> const& logger() {
  static std::shared_ptr<spdlog::logger> const instance = make_logger();
  return instance;
}

void set_log_level(std::string_view level) {
  logger()->set_level(parse_level(level));
}

void log_message(log_level level, std::string_view message) noexcept {
  try {
    // As a string_view argument, the text is written verbatim: braces in it stay braces.
    logger()->log(spdlog_level(level), spdlog::string_view_t{message.data(), message.size()});
  } catch (...) {  // a message that cannot be written is dropped, as spdlog drops it
  }
}

bool log_enabled(log_level level) noexcept {
  try {
    return logger()->should_log(spdlog_level(level));
  } catch (...) {
    return false;
  }
}

}  // namespace gpufeed
