#pragma once
/// @file
/// @brief The library's version.

#define GPUFEED_VERSION_MAJOR 0
#define GPUFEED_VERSION_MINOR 1
#define GPUFEED_VERSION_PATCH 0

namespace gpufeed {
/// @brief "major.minor.patch".
inline constexpr char const* version = "0.1.0";
}  // namespace gpufeed
