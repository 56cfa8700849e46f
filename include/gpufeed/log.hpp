#pragma once
/// @file
/// @brief gpufeed's logger: spdlog, named "gpufeed".
///
/// Its level starts from the GPUFEED_LOG_LEVEL environment variable (trace, debug, info, warn,
/// error, off; default warn: only what a user must act on, as torch's loaders say nothing
/// else; the loader's plan is at info). Call `set_log_level` or use spdlog's registry to change it.
///
/// Code that includes torch's headers logs through `log_message` instead of `logger()`:
/// @code
///   if (gpufeed::log_enabled(gpufeed::log_level::info)) {
///     gpufeed::log_message(gpufeed::log_level::info, "batch size " + std::to_string(n));
///   }
/// @endcode

#include <cstdint>
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

// The logger without spdlog, for translation units that include torch. A pip torch puts its
// own fmt headers on the include path, and spdlog's headers (Debian's spdlog is built against an
// external fmt 9) do not compile against them. Building the logging against torch's fmt instead
// would tie gpufeed to one torch's fmt version, while gpufeed::torch builds against libtorch 1.13
// and 2.x alike; so those units format their text with the standard library and hand it here,
// and spdlog stays behind this header.

/// @brief A message's severity, as spdlog names them.
enum class log_level : std::uint8_t { trace, debug, info, warn, error, critical };

/// @brief Writes an already formatted message through `logger()` at `level`.
///
/// Thread-safe; never throws (a failure to write is dropped, as spdlog drops it). The text is
/// written as given: no format placeholders are expanded.
void log_message(log_level level, std::string_view message) noexcept;
/// @brief Whether `logger()` writes messages at `level` now: lets a caller skip building text
/// that would be dropped.
[[nodiscard]] bool log_enabled(log_level level) noexcept;

}  // namespace gpufeed
