#pragma once
/// @file
/// @brief Per-field conversions applied on the GPU right after a batch's copy.
///
/// Sending uint8 pixels and converting them on the GPU moves 4x fewer bytes over PCIe than
/// sending float32. Each transformed field is converted, normalized and re-laid out in one pass
/// (one kernel) on the loader's copy stream.
///
/// @code
/// gpufeed::loader_options opts{.batch_size = 256, .target = gpufeed::placement::cuda};
/// opts.transforms.push_back({.field = "image", .to = gpufeed::dtype::bf16,
///                            .output_layout = gpufeed::image_layout::chw,
///                            .scale = 1.0f / 255, .mean = {0.485f, 0.456f, 0.406f},
///                            .std = {0.229f, 0.224f, 0.225f}});
/// @endcode

#include <cstdint>
#include <string>
#include <vector>

#include "gpufeed/dtype.hpp"

namespace gpufeed {

/// @brief Where the channel dimension of an image field lies.
enum class image_layout : std::uint8_t {
  hwc,  ///< [height, width, channels]: channels-last, what image decoders produce
  chw,  ///< [channels, height, width]: what most convolution layers expect
};

/// @brief `out = (in * scale - mean[c]) * (1 / std[c])` in float32, converted to `to`, in
/// `output_layout`.
///
/// The field must be uint8. For a rank-3 field the channel dimension comes from `input_layout`;
/// for any other rank there is one channel and the layouts must be equal. `mean` and `std` hold
/// one value per channel, or one for all channels, or nothing (0 and 1).
struct field_transform {
  std::string field;                               ///< name of the field to convert
  dtype to = dtype::f32;                           ///< f32, f16 or bf16
  image_layout input_layout = image_layout::hwc;   ///< the field as the dataset writes it
  image_layout output_layout = image_layout::hwc;  ///< the field as the batch delivers it
  float scale = 1.0f;                              ///< applied first (1/255 maps pixels to [0, 1])
  std::vector<float> mean{};                       ///< subtracted after scaling
  std::vector<float> std{};                        ///< divides last; every value must be > 0
};

}  // namespace gpufeed
