#pragma once
// The JPEGs `gpufeed-bench decode` measures: a generated set in image_folder's layout, or a
// folder the user names.

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace gpufeed::bench {

/// How to generate the set.
struct photo_set_options {
  std::size_t images = 200;
  int width = 320;
  int height = 256;
  int quality = 90;  ///< JPEG quality (libjpeg's scale, 4:2:0 as OpenCV writes)
  std::uint64_t seed = 1;
};

/// Writes `options.images` photograph-like JPEGs (structure at every scale, edges, grain: they
/// compress about as photographs of that size do) into `folder/photos/`, an image_folder with
/// one class. Deterministic for a seed. @throws std::runtime_error if a file cannot be written.
void write_photo_set(std::filesystem::path const& folder, photo_set_options const& options);

}  // namespace gpufeed::bench
