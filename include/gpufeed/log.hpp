#pragma once
/// @file
/// @brief gpufeed's logger: spdlog, named "gpufeed".
///
/// Its level starts from the GPUFEED_LOG_LEVEL environment variable (trace, debug, info, warn,
/// error, off; default info). Call `set_log_level` or use spdlog's registry to change it.

#include <memory>
#include <string_view>

namespace spdlog {
class logger;
}

namespace gpufeed {

/// @brief The library's logger (created on first use, thread-safe).
[[nodiscard]] std::shared_ptr<spdlog::logger> const& logger();
/// @brief Sets the level by name ("warn", "info", ...). @throws logic_error on an unknown name.
void set_log_level(std::string_view level);

}  // namespace gpufeed
