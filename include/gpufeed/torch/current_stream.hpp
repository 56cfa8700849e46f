#pragma once
/// @file
/// @brief torch's CUDA streams as gpufeed stream_views (internal to gpufeed::torch).

#include <c10/core/Stream.h>

#include "gpufeed/stream_view.hpp"

namespace gpufeed::torch::detail {

/// Whether this build can put batches on the GPU for torch (gpufeed and libtorch both with
/// CUDA).
[[nodiscard]] bool torch_has_cuda() noexcept;

/// torch's current stream on `device`. torch's default stream is the legacy default stream, and
/// is named as such (`stream_view::legacy_default()`): gpufeed's copy stream is non-blocking, so
/// copies still overlap with it. @throws logic_error in builds without CUDA.
[[nodiscard]] stream_view current_stream(int device);

/// `stream` as a stream_view, checked to be a CUDA stream of `device`.
/// @throws logic_error for another device type or device (naming both), or in builds without
/// CUDA.
[[nodiscard]] stream_view cuda_stream_of(::c10::Stream stream, int device);

}  // namespace gpufeed::torch::detail
