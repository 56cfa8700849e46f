#pragma once
// The reference of `gpufeed-bench h2d`: what a plain loop of cudaMemcpyAsync reaches on this
// machine for one batch's bytes, pinned host memory to device memory, with nothing else going on.

#include <cstddef>

#include "gpufeed/cuda/buffer.hpp"
#include "gpufeed/cuda/event.hpp"
#include "gpufeed/cuda/stream.hpp"

namespace gpufeed::bench {

class h2d_peak {
 public:
  /// Allocates `bytes` of pinned and of device memory on the current device.
  explicit h2d_peak(std::size_t bytes);

  /// Bytes per second over `copies` back-to-back copies on one stream, timed with events, after
  /// `warmup` untimed ones.
  [[nodiscard]] double run(std::size_t warmup, std::size_t copies) const;

 private:
  void enqueue(std::size_t copies) const;

  gpufeed::cuda::pinned_buffer host_;
  gpufeed::cuda::device_buffer device_;
  gpufeed::cuda::cuda_stream stream_;
  gpufeed::cuda::cuda_event start_{gpufeed::cuda::cuda_event::kind::timing};
  gpufeed::cuda::cuda_event stop_{gpufeed::cuda::cuda_event::kind::timing};
};

}  // namespace gpufeed::bench
