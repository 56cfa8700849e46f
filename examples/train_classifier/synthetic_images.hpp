#pragma once
// The example's data: photograph-sized JPEGs of ten kinds of texture, written once into a cache
// folder in image_folder's layout (one directory per class), never downloaded.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace train_classifier {

/// What to write.
struct synthetic_images_options {
  std::filesystem::path cache_dir;  ///< the folder that holds every generated set
  std::size_t train_images = 3000;  ///< training images; a fifth as many more are held out
  int min_side = 320;               ///< the long side of each image is drawn from
  int max_side = 500;               ///< [min_side, max_side], as photographs vary in size
  unsigned threads = 0;             ///< writer threads (0: the CPUs available)
  bool verbose = true;              ///< say what is written
};

/// Where one generated set lives: `root/train/<class>/*.jpg` and `root/val/<class>/*.jpg`.
struct synthetic_images {
  std::filesystem::path root;
  std::filesystem::path train;
  std::filesystem::path val;
  std::size_t train_images = 0;
  std::size_t val_images = 0;
  std::uintmax_t bytes = 0;  ///< of the JPEGs, both splits
  double write_seconds = 0;  ///< 0 when the set was already in the cache
  bool written_now = false;  ///< false when the set was already in the cache
};

/// The ten class names, in label order: each a kind of texture that covers the whole picture,
/// so that any crop of it shows its class.
[[nodiscard]] std::vector<std::string> const& class_names();

/// `$XDG_CACHE_HOME/gpufeed/train_classifier-v2`, else `~/.cache/gpufeed/train_classifier-v2`,
/// else the same under the temporary directory.
[[nodiscard]] std::filesystem::path default_cache_dir();

/// Returns the set for `options`, writing it first if the cache does not hold it. Every image
/// is a pure function of its index (seeded), so a set is the same on every machine. The set is
/// written into a temporary folder next to its final place and renamed into place when
/// complete, so an interrupted run leaves no partial set and concurrent runs do not collide.
/// @throws std::runtime_error if a JPEG cannot be written.
[[nodiscard]] synthetic_images ensure_synthetic_images(synthetic_images_options const& options);

}  // namespace train_classifier
