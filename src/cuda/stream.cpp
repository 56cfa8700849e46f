#include "gpufeed/cuda/stream.hpp"

#include <utility>

#include "gpufeed/cuda/error.hpp"

namespace gpufeed::cuda {

cuda_stream::cuda_stream() {
  GPUFEED_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

cuda_stream::~cuda_stream() {
  if (stream_ != nullptr) {
    // cudaStreamDestroy returns at once; the stream's queued work still completes.
    GPUFEED_CUDA_LOG(cudaStreamDestroy(stream_));
  }
}

cuda_stream::cuda_stream(cuda_stream&& other) noexcept
    : stream_{std::exchange(other.stream_, nullptr)} {}

cuda_stream& cuda_stream::operator=(cuda_stream&& other) noexcept {
  std::swap(stream_, other.stream_);
  return *this;
}

void cuda_stream::synchronize() const {
  GPUFEED_CUDA_TRY(cudaStreamSynchronize(stream_));
}

}  // namespace gpufeed::cuda
