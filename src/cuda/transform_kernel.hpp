#pragma once
// The GPU transform: uint8 -> f32/f16/bf16 with per-channel scale, mean and 1/std, and an
// optional HWC <-> CHW change, in one pass over one field of one batch.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "gpufeed/dtype.hpp"

namespace gpufeed::detail {

enum class layout_change : std::uint8_t { none, hwc_to_chw, chw_to_hwc };

struct transform_args {
  std::uint8_t const* in = nullptr;
  void* out = nullptr;
  dtype out_type = dtype::f32;
  layout_change change = layout_change::none;
  bool channels_last = true;  // for layout_change::none: where the channel index comes from
  std::size_t samples = 0;
  std::size_t channels = 1;
  std::size_t pixels = 0;  // elements per channel per sample
  float scale = 1.0f;
  float const* mean = nullptr;     // device memory, `channels` values
  float const* inv_std = nullptr;  // device memory, `channels` values
  unsigned max_blocks = 1024;
};

/// Enqueues the conversion on `stream`. Asynchronous. @throws cuda_error if the launch fails.
void transform_async(transform_args const& args, cudaStream_t stream);

}  // namespace gpufeed::detail
