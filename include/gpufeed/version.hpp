#pragma once
/// @file
/// @brief The library's version: the one place it is written. CMakeLists.txt's project() and the
/// Python package's metadata (pyproject.toml) read these three lines.

#define GPUFEED_VERSION_MAJOR 0
#define GPUFEED_VERSION_MINOR 1
#define GPUFEED_VERSION_PATCH 0

#define GPUFEED_DETAIL_STRINGIFY(x) #x
#define GPUFEED_DETAIL_VERSION(major, minor, patch) \
  GPUFEED_DETAIL_STRINGIFY(major)                   \
  "." GPUFEED_DETAIL_STRINGIFY(minor) "." GPUFEED_DETAIL_STRINGIFY(patch)

namespace gpufeed {
/// @brief "major.minor.patch".
inline constexpr char const* version =
    GPUFEED_DETAIL_VERSION(GPUFEED_VERSION_MAJOR, GPUFEED_VERSION_MINOR, GPUFEED_VERSION_PATCH);
}  // namespace gpufeed
