#pragma once
/// @file
/// @brief What this build of gpufeed has: its optional parts, the libraries each runs with, and
/// why a part is missing.

#include <string>
#include <vector>

namespace gpufeed {

/// @brief One optional part of the library.
struct build_part {
  std::string name;    ///< "hdf5", "images", "opencv" or "cuda"
  bool built = false;  ///< whether this build has it
  /// Built: the libraries it runs with and their versions (for "cuda", also whether a driver
  /// and devices are there). Not built: why, and what to do about it.
  std::string detail;
};

/// @brief The optional parts, in the order above. Asks the CUDA runtime for its state when the
/// CUDA part is built (cheap after the first call).
[[nodiscard]] std::vector<build_part> build_parts();

}  // namespace gpufeed
