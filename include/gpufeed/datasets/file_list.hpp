#pragma once
/// @file
/// @brief Images named in a CSV file of `path,label` rows, decoded and augmented by the loader's
/// workers.
///
/// @code
/// // train.csv:
/// //   path,label
/// //   images/0001.jpg,3
/// //   "images/with, comma.png",0
/// auto train = std::make_shared<gpufeed::file_list>("data/train.csv",
///                                                   gpufeed::image_options{.height = 160,
///                                                                          .width = 160});
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

/// @brief A dataset of the images a CSV file lists, one `path,label` row per image, in file order.
///
/// The first row is a header, and skipped, when its label is not an integer. Relative paths are
/// resolved against the CSV file's directory. Fields may be quoted (`"a, b.jpg"`, with `""` for a
/// quote); blank lines are ignored; `\r\n` line ends are accepted. The listed files are not
/// opened at construction: a missing one fails when it is read. Fields and transforms as in
/// `image_folder`: `image` uint8 [height, width, 3] (RGB, HWC) and `label` int64 [].
/// Thread-safe.
class file_list final : public dataset {
 public:
  /// @param csv the CSV file. @param options the output size and augmentations.
  /// @throws file_error naming the CSV file if it cannot be read, lists no image, or has a bad row
  /// (the message gives the line number and what is wrong).
  /// @throws logic_error on bad options.
  explicit file_list(std::filesystem::path const& csv, image_options options = {});

  [[nodiscard]] std::size_t size() const override { return entries_.size(); }
  [[nodiscard]] sample_spec spec() const override;
  /// @throws file_error naming the image's path if it cannot be read or decoded.
  void read(std::size_t index, sample_view out, read_context const& ctx) const override;

  /// @brief Every image with its label, in row order (paths resolved).
  [[nodiscard]] std::vector<image_entry> const& entries() const noexcept { return entries_; }
  /// @brief The options in force.
  [[nodiscard]] image_options const& options() const noexcept { return pipeline_.options(); }
  /// @brief Where the workers' time went so far (read, decode, resize, jitter), summed over
  /// workers; thread-safe.
  [[nodiscard]] image_stage_times stage_times() const noexcept { return pipeline_.stage_times(); }

 private:
  detail::image_pipeline pipeline_;
  std::vector<image_entry> entries_;
};

}  // namespace gpufeed
