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

/// Which decode shortcuts a pipeline takes (src/image/pipeline/decode_strategy.hpp).
struct decode_strategy;

/// @brief Reads a whole file into `buffer` (resized to fit) with POSIX open/read.
/// @throws file_error naming `path` (with the system's reason) if it cannot be opened or read,
/// or if it is empty.
void read_file(std::string const& path, std::vector<unsigned char>& buffer);

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
  /// @brief Decodes with the shortcuts `options.full_decoding` allows (or those a
  /// scoped_decode_strategy of this thread sets).
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
  // Fixed at construction and shared by the copies; held by pointer so that the public headers
  // that hold a pipeline need not see the strategy.
  std::shared_ptr<decode_strategy const> strategy_;
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
