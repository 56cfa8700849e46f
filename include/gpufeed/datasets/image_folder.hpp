#pragma once
/// @file
/// @brief Images in one folder per class (torchvision's `ImageFolder` layout), decoded and
/// augmented by the loader's workers.
///
/// @code
/// // train/cat/001.jpg, train/cat/002.png, train/dog/001.jpg, ...
/// auto train = std::make_shared<gpufeed::image_folder>(
///     "train", gpufeed::image_options{.resize = gpufeed::resize_mode::random_resized_crop,
///                                     .horizontal_flip = true});
/// // train->classes() == {"cat", "dog"}; fields "image" u8 [224, 224, 3] and "label" i64 [].
/// gpufeed::loader loader{train, {.batch_size = 256, .workers = 8, .shuffle = true, .seed = 1}};
/// @endcode

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gpufeed/dataset.hpp"
#include "gpufeed/datasets/image_options.hpp"
#include "gpufeed/detail/image_pipeline.hpp"

namespace gpufeed {

/// @brief `root/<class>/**/*.{jpg,jpeg,png,bmp,tif,tiff,webp,ppm,pgm}` (extensions in any case,
/// torchvision's list), torchvision's `ImageFolder` convention: the class directories sorted by
/// name, a class's label its position in that order, the files of a class sorted by (directory,
/// name), classes in label order.
///
/// Fields: `image` uint8 [height, width, 3] (RGB, HWC) and `label` int64 []. Images are decoded by
/// their content (a PNG named .jpg decodes): JPEG and PNG in every build, BMP, TIFF, WebP and PNM
/// where gpufeed was built with OpenCV (`GPUFEED_WITH_OPENCV`; elsewhere reading one fails with a
/// `file_error` that says so). Then they are cropped, scaled, flipped and jittered as
/// `image_options` says, with every random choice drawn from `read_context::seed`.
/// Thread-safe; the file list is built once, at construction.
class image_folder final : public dataset {
 public:
  /// @param root the folder holding one directory per class.
  /// @param options the output size and augmentations.
  /// @throws file_error naming the path if `root` is missing or not a directory, has no class
  /// directories, or a class directory holds no image (as torchvision does).
  /// @throws logic_error on bad options.
  explicit image_folder(std::filesystem::path const& root, image_options options = {});

  [[nodiscard]] std::size_t size() const override { return entries_.size(); }
  [[nodiscard]] sample_spec spec() const override;
  /// @throws file_error naming the image's path if it cannot be read or decoded.
  void read(std::size_t index, sample_view out, read_context const& ctx) const override;

  /// @brief The class names, sorted; a class's label is its position here.
  [[nodiscard]] std::vector<std::string> const& classes() const noexcept { return classes_; }
  /// @brief Every image with its label, in index order.
  [[nodiscard]] std::vector<image_entry> const& entries() const noexcept { return entries_; }
  /// @brief The options in force.
  [[nodiscard]] image_options const& options() const noexcept { return pipeline_.options(); }
  /// @brief Where the workers' time went so far (read, decode, resize, jitter), summed over
  /// workers; thread-safe.
  [[nodiscard]] image_stage_times stage_times() const noexcept { return pipeline_.stage_times(); }

 private:
  detail::image_pipeline pipeline_;
  std::vector<std::string> classes_;
  std::vector<image_entry> entries_;
};

/// @brief Whether `path` ends in one of torchvision's image extensions (.jpg, .jpeg, .png, .bmp,
/// .tif, .tiff, .webp, .ppm, .pgm), in any case.
[[nodiscard]] bool has_image_extension(std::filesystem::path const& path);

}  // namespace gpufeed
