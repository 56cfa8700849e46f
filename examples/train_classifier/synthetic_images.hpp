#pragma once
// The example's data: JPEGs of stripes, written once into a cache folder in image_folder's layout
// (one directory per class), never downloaded.

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace train_classifier {

/// What to write.
struct synthetic_images_options {
  std::filesystem::path cache_dir;  ///< the folder that holds every generated set
  std::size_t train_images = 3000;  ///< training images; a fifth as many more are held out
  int image_size = 64;  ///< the training size; the JPEGs are twice as large, as real photos are
  bool verbose = true;  ///< say what is written
};

/// Where one generated set lives: `root/train/<class>/*.jpg` and `root/val/<class>/*.jpg`.
struct synthetic_images {
  std::filesystem::path root;
  std::filesystem::path train;
  std::filesystem::path val;
  std::size_t train_images = 0;
  std::size_t val_images = 0;
  bool written_now = false;  ///< false when the set was already in the cache
};

/// The ten class names, in label order: stripes that run across (horizontal-1 .. -5, 1 the
/// widest) or down (vertical-1 .. -5) the image.
[[nodiscard]] std::vector<std::string> const& class_names();

/// `$XDG_CACHE_HOME/gpufeed/train_classifier-v1`, else `~/.cache/gpufeed/train_classifier-v1`,
/// else the same under the temporary directory.
[[nodiscard]] std::filesystem::path default_cache_dir();

/// Returns the set for `options`, writing it first if the cache does not hold it. The set is
/// written into a temporary folder next to its final place and renamed into place when complete,
/// so an interrupted run leaves no partial set and concurrent runs do not collide.
/// @throws std::runtime_error if a JPEG cannot be written.
[[nodiscard]] synthetic_images ensure_synthetic_images(synthetic_images_options const& options);

}  // namespace train_classifier
