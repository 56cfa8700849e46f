#include "h2d_peak.hpp"

#include <cuda_runtime_api.h>

#include <cstring>

#include "gpufeed/cuda/error.hpp"

namespace gpufeed::bench {

h2d_peak::h2d_peak(std::size_t bytes) : host_{bytes}, device_{bytes} {
  // Written once so that the source is ordinary data, as a batch would be.
  std::memset(host_.data(), 0x5a, host_.size());
}

void h2d_peak::enqueue(std::size_t copies) const {
  for (std::size_t i = 0; i < copies; ++i) {
    GPUFEED_CUDA_TRY(cudaMemcpyAsync(device_.data(), host_.data(), host_.size(),
                                     cudaMemcpyHostToDevice, stream_.native()));
  }
}

double h2d_peak::run(std::size_t warmup, std::size_t copies) const {
  enqueue(warmup);
  start_.record(stream_.native());
  enqueue(copies);
  stop_.record(stream_.native());
  stop_.synchronize();
  double const seconds = static_cast<double>(gpufeed::cuda::elapsed_ms(start_, stop_)) * 1e-3;
  return static_cast<double>(copies) * static_cast<double>(host_.size()) / seconds;
}

}  // namespace gpufeed::bench
