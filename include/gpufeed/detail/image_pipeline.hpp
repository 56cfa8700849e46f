#pragma once
/// @file
/// @brief The decode and transform shared by `image_folder` and `file_list` (internal).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpufeed/dataset.hpp"
#include "gpufeed/datasets/image_options.hpp"
#include "gpufeed/sample_spec.hpp"
#include "gpufeed/sample_view.hpp"

namespace gpufeed::detail {

/// @brief Reads a whole file into `buffer` (resized to fit) with POSIX open/read.
/// @throws file_error naming `path` (with the system's reason) if it cannot be opened or read,
/// or if it is empty.
void read_file(std::string const& path, std::vector<unsigned char>& buffer);

/// @brief The DCT scaling of a JPEG decode for a crop of `crop_width` x `crop_height` source
/// pixels: the reduction (8, 4 or 2) that leaves the crop at least the output's size, the largest
/// such, else 1 (always 1 without `image_options::reduced_decoding`).
///
/// Only 1/2, 1/4 and 1/8: libjpeg-turbo's other M/8 scales (3/8, 5/8, 6/8, 7/8) would decode
/// fewer pixels still, but their inverse DCTs (and the 12x12 or 10x10 ones of subsampled chroma
/// there) have no SIMD code. Tried on 400-500 px photograph-like JPEGs to 224 px with
/// `gpufeed-bench decode` (docs/benchmarks/decode), a 6/8 or 5/8 decode of half the
/// pixels took about 30 % longer than the 8/8 decode of all of them.
[[nodiscard]] int jpeg_reduction(image_options const& options, double crop_width,
                                 double crop_height) noexcept;

/// @brief The share of the (DCT-scaled) image a crop must cover for the planar decode
/// (`image_options::planar_decoding`) of a JPEG whose planes are decoded whole (progressive, or
/// built without libjpeg-turbo's internal header: not jpeg_reader::decodes_planes_in_part());
/// smaller crops of those are decoded cropped, to RGB. Baseline JPEGs take the planar path
/// whatever the share: decoding only the iMCUs under the crop, RandomResizedCrop to 224 gives
/// 2.5-9 % more images/s than with this threshold, to 112 0.997-1.035 (`gpufeed-bench decode`).
/// For planes decoded whole, on 400-500 px JPEGs to 224 px: at the 64 % of Resize(256) +
/// CenterCrop(224) the planar path costs about 12 % less CPU per image (all rows and columns,
/// but no chroma upsampling or colour conversion at full size, and a cheaper resize); below
/// 50 % no difference is measurable.
inline constexpr double planar_min_share = 0.5;

using stage_clock = std::chrono::steady_clock;

/// @brief What an image pipeline's stages took, summed over the threads that ran it. Shared by
/// the copies of a pipeline; relaxed atomic counters (a few additions per image).
class image_stage_counters {
 public:
  /// @brief Adds the time one file took to read.
  void record_read(stage_clock::duration elapsed) noexcept;
  /// @brief Adds one image: decode from `start` to `decoded`, crop/resize/flip to `resized`,
  /// jitter to `done`; the pixels it decoded and the pixels of its full size; whether it was
  /// decoded to planes.
  void record(stage_clock::time_point start, stage_clock::time_point decoded,
              stage_clock::time_point resized, stage_clock::time_point done,
              std::uint64_t decoded_pixels, std::uint64_t source_pixels, bool planar) noexcept;
  [[nodiscard]] image_stage_times totals() const noexcept;

 private:
  std::atomic<std::uint64_t> images_{0};
  std::atomic<std::uint64_t> read_ns_{0};
  std::atomic<std::uint64_t> decode_ns_{0};
  std::atomic<std::uint64_t> resize_ns_{0};
  std::atomic<std::uint64_t> jitter_ns_{0};
  std::atomic<std::uint64_t> decoded_pixels_{0};
  std::atomic<std::uint64_t> source_pixels_{0};
  std::atomic<std::uint64_t> planar_images_{0};
};

/// @brief Decodes an image by its content and writes it, cropped, scaled and augmented as the
/// options say, as uint8 RGB HWC. Thread-safe; its only mutable state is its stage counters
/// (each thread keeps its own file and pixel buffers). All randomness comes from the `seed`
/// argument.
class image_pipeline {
 public:
  /// @throws logic_error on options out of range (naming the option and its value).
  explicit image_pipeline(image_options options);

  [[nodiscard]] image_options const& options() const noexcept { return options_; }
  /// @brief [height, width, 3].
  [[nodiscard]] std::vector<std::int64_t> shape() const;
  /// @brief Bytes of one output image.
  [[nodiscard]] std::size_t bytes() const noexcept;

  /// @brief Reads the file at `path` and transforms it into `out` (exactly `bytes()` long).
  /// @throws file_error naming `path` for an unreadable, empty, truncated or undecodable file.
  void load(std::string const& path, std::span<std::uint8_t> out, std::uint64_t seed) const;

  /// @brief As `load`, from the encoded bytes of the file called `name`.
  void transform(std::span<unsigned char const> encoded, std::string const& name,
                 std::span<std::uint8_t> out, std::uint64_t seed) const;

  /// @brief The time spent per stage by this pipeline and its copies so far.
  [[nodiscard]] image_stage_times stage_times() const noexcept;

 private:
  image_options options_;
  std::shared_ptr<image_stage_counters> counters_;
};

/// @brief The fields of a labelled image dataset (image_folder, file_list): "image" uint8
/// [H, W, 3] as `pipeline` makes it, and "label" int64 [].
[[nodiscard]] sample_spec labelled_image_spec(image_pipeline const& pipeline);

/// @brief The read of a labelled image dataset: entry `index` of `entries` through `pipeline`
/// into `out`, seeded by `ctx.seed`. @throws logic_error naming `dataset` if `index` is past the
/// end; file_error from the pipeline.
void read_labelled_image(image_pipeline const& pipeline, std::span<image_entry const> entries,
                         std::size_t index, sample_view out, read_context const& ctx,
                         char const* dataset);

}  // namespace gpufeed::detail
