#pragma once
/// @file
/// @brief torch's current CUDA stream as a gpufeed stream_view (internal to gpufeed::torch).

#include "gpufeed/stream_view.hpp"

namespace gpufeed::torch::detail {

/// Whether this build can put batches on the GPU for torch (gpufeed and libtorch both with
/// CUDA).
[[nodiscard]] bool torch_has_cuda() noexcept;

/// torch's current stream on `device`. torch's default stream is the legacy default stream, and
/// is named as such (`stream_view::legacy_default()`): gpufeed's copy stream is non-blocking, so
/// copies still overlap with it. @throws logic_error in builds without CUDA.
[[nodiscard]] stream_view current_stream(int device);

}  // namespace gpufeed::torch::detail
