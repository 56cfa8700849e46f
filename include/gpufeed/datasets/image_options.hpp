#pragma once
/// @file
/// @brief How the image datasets (`image_folder`, `file_list`) decode and augment each image,
/// and the (path, label) entry they both list.
///
/// @code
/// gpufeed::image_options train{.height = 224, .width = 224,
///                              .resize = gpufeed::resize_mode::random_resized_crop,
///                              .horizontal_flip = true,
///                              .jitter = {.brightness = 0.4F, .contrast = 0.4F,
///                                         .saturation = 0.4F, .hue = 0.1F}};
/// gpufeed::image_options eval{.height = 224, .width = 224};  // resize to 256, center crop 224
/// @endcode

#include <cstdint>
#include <string>

namespace gpufeed {

/// @brief How the decoded image is brought to the output size.
enum class resize_mode : std::uint8_t {
  /// Scale so that the shorter side is `image_options::resize_to` (and the output fits), then
  /// take the centre (torchvision's `Resize(resize_to)` + `CenterCrop(height, width)`).
  center_crop,
  /// torchvision's `RandomResizedCrop`: a random area in `scale` and aspect ratio in `ratio`,
  /// up to 10 attempts, else the centre crop of the closest allowed ratio; then resized.
  random_resized_crop,
};

/// @brief Color jitter factors, torchvision's `ColorJitter` semantics: each factor is drawn
/// uniformly from [max(0, 1 - x), 1 + x] (hue: a shift in [-hue, hue] of a full turn), and the
/// four operations are applied in a random order. 0 turns an operation off.
struct color_jitter {
  float brightness = 0;
  float contrast = 0;
  float saturation = 0;
  /// In [0, 0.5].
  float hue = 0;
};

/// @brief The decode and transform of one image. Output: uint8 RGB, HWC, [height, width, 3].
struct image_options {
  /// Output height in pixels (1 .. 16384).
  int height = 224;
  /// Output width in pixels (1 .. 16384).
  int width = 224;
  /// How the image is cropped and scaled to height x width.
  resize_mode resize = resize_mode::center_crop;
  /// center_crop: the shorter side after scaling; 0 means round(min(height, width) * 256 / 224)
  /// (256 for 224). Raised where needed so that height x width fits.
  int resize_to = 0;
  /// random_resized_crop: the range of the crop's area, as a fraction of the image's.
  float scale_min = 0.08F;
  float scale_max = 1.0F;
  /// random_resized_crop: the range of the crop's aspect ratio (width / height).
  float ratio_min = 3.0F / 4.0F;
  float ratio_max = 4.0F / 3.0F;
  /// Mirror left-right with probability 0.5.
  bool horizontal_flip = false;
  /// Color jitter (off by default).
  color_jitter jitter{};
  /// Decode every JPEG whole, at full size, to RGB, then crop and resample: the reference pixels
  /// (a whole decode followed by the resampler, as PIL and torchvision), and the slowest path.
  /// false (the default): decode only the rows and columns the crop needs (the pixels inside it
  /// are exactly a whole decode's); at 1/2, 1/4 or 1/8 size (libjpeg's DCT scaling) where the
  /// crop is that much larger than the output (nearly the same pixels: under 3 grey levels on
  /// average from a full decode and the same resize); and, where the crop is resampled anyway, a
  /// YCbCr JPEG to its planes, resampled each at its own resolution and converted to RGB at the
  /// output size (chroma within a grey level of a full RGB decode's on average, more at sharp
  /// colour edges). A crop that is a plain copy (the output's size, whole pixels) gets the same
  /// pixels either way, and PNG is decoded whole either way. Much faster: on 320-500 px
  /// photographs, crops of 25-100 % of the area to 64 x 64, the default decodes 9 % of the pixels
  /// and costs 0.33 ms of CPU per image against 1.32 ms for `cv::imread`'s whole decode
  /// (docs/benchmarks/demo).
  bool full_decoding = false;
  /// Read each JPEG's compressed data to the end of the image (true, the default), so that damage
  /// or truncation anywhere in the file is an error, even below the crop, as PIL fails on a
  /// truncated file. false: stop decoding after the last row the crop needs and check only the
  /// part read. The pixels are the same; what is given up is noticing damage or truncation
  /// further down (another epoch's crop that reaches it still fails). What is gained is the
  /// entropy decoding of the rows under the crop: 5-13 % more images/s with random crops and
  /// 4-7 % with the centre crop on 400-500 px photographs, none for crops that reach the bottom
  /// (`gpufeed-bench decode`, docs/benchmarks/decode). Baseline JPEGs without full_decoding
  /// only: a progressive JPEG is read whole either way, as is every row of a full decode; PNG is
  /// always decoded whole.
  bool check_whole_file = true;
};

/// @brief Where an image dataset's workers spent their time, summed over workers, since the
/// dataset was constructed (`image_folder::stage_times()`, `file_list::stage_times()`).
struct image_stage_times {
  std::uint64_t images = 0;          ///< images decoded and transformed (failures not counted)
  double read_s = 0;                 ///< reading the files
  double decode_s = 0;               ///< decoding them (JPEG: only the part and the size needed)
  double resize_s = 0;               ///< cropping, scaling, flipping into the batch
  double jitter_s = 0;               ///< colour jitter
  std::uint64_t decoded_pixels = 0;  ///< pixels decoded (after DCT scaling and cropping)
  std::uint64_t source_pixels = 0;   ///< the same images' pixels at full size
  std::uint64_t planar_images = 0;   ///< images decoded to YCbCr planes (not full_decoding)
};

/// @brief One image of an image dataset: its path and its label.
struct image_entry {
  std::string path;
  std::int64_t label = 0;
  friend bool operator==(image_entry const&, image_entry const&) = default;
};

}  // namespace gpufeed
