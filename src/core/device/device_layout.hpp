#pragma once
// Where each field of a batch lives in a device slot, and what the GPU transform makes of it.
//
// A device slot starts with a mirror of the host slot (one cudaMemcpyAsync copies the whole
// host slot there); each transformed field then has an output region of its own after the
// mirror, written by the transform kernel. Untransformed fields are read from the mirror.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/dtype.hpp"
#include "gpufeed/transform.hpp"

namespace gpufeed::detail {

/// What one field of a delivered batch is, per sample.
struct field_output {
  dtype type = dtype::u8;
  std::vector<std::int64_t> shape;  // one sample's
  std::size_t bytes = 0;            // one sample's
  std::size_t device_offset = 0;    // start of the field's region in the device slot

  // Set only for transformed fields.
  bool transformed = false;
  image_layout input_layout = image_layout::hwc;
  image_layout output_layout = image_layout::hwc;
  std::size_t channels = 1;
  std::size_t pixels = 0;  // elements per channel per sample (H*W; all elements for rank != 3)
  float scale = 1.0f;
  std::vector<float> mean;     // one per channel
  std::vector<float> inv_std;  // one per channel
};

class device_layout {
 public:
  /// @throws logic_error naming the transform and the field when a transform does not fit the
  /// field (unknown name, not uint8, bad channel count, unsupported output type...), or when an
  /// output's size or the device slot's does not fit in std::size_t.
  device_layout(slot_layout const& host, std::vector<field_transform> const& transforms);

  [[nodiscard]] std::size_t fields() const noexcept { return fields_.size(); }
  [[nodiscard]] field_output const& field(std::size_t f) const noexcept { return fields_[f]; }
  /// Bytes of one device slot: the host mirror plus the transforms' outputs.
  [[nodiscard]] std::size_t slot_bytes() const noexcept { return slot_bytes_; }
  [[nodiscard]] bool any_transform() const noexcept { return any_transform_; }

 private:
  std::vector<field_output> fields_;
  std::size_t slot_bytes_ = 0;
  bool any_transform_ = false;
};

}  // namespace gpufeed::detail
