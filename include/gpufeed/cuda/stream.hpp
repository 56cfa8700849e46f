#pragma once
/// @file
/// @brief `cuda_stream`: an owning, move-only, non-blocking CUDA stream.

#include <cuda_runtime_api.h>

#include "gpufeed/stream_view.hpp"

namespace gpufeed::cuda {

/// @brief A stream created with `cudaStreamNonBlocking` on the current device, so that it never
/// synchronizes with the legacy default stream. Destroyed (after its work completes) with it.
class cuda_stream {
 public:
  /// @throws cuda_error if the stream cannot be created.
  cuda_stream();
  ~cuda_stream();
  cuda_stream(cuda_stream&& other) noexcept;
  cuda_stream& operator=(cuda_stream&& other) noexcept;
  cuda_stream(cuda_stream const&) = delete;
  cuda_stream& operator=(cuda_stream const&) = delete;

  [[nodiscard]] cudaStream_t native() const noexcept { return stream_; }
  [[nodiscard]] stream_view view() const { return stream_view{stream_}; }
  /// @brief Blocks the host until all work queued on the stream has completed.
  /// @throws cuda_error if that work failed.
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace gpufeed::cuda
