#include "gpufeed/cuda/event.hpp"

#include <utility>

#include "gpufeed/cuda/error.hpp"

namespace gpufeed::cuda {

cuda_event::cuda_event(kind k) {
  GPUFEED_CUDA_TRY(cudaEventCreateWithFlags(
      &event_, k == kind::timing ? cudaEventDefault : cudaEventDisableTiming));
}

cuda_event::~cuda_event() {
  if (event_ != nullptr) {
    GPUFEED_CUDA_LOG(cudaEventDestroy(event_));
  }
}

cuda_event::cuda_event(cuda_event&& other) noexcept
    : event_{std::exchange(other.event_, nullptr)} {}

cuda_event& cuda_event::operator=(cuda_event&& other) noexcept {
  std::swap(event_, other.event_);
  return *this;
}

void cuda_event::record(cudaStream_t stream) const {
  GPUFEED_CUDA_TRY(cudaEventRecord(event_, stream));
}

bool cuda_event::done() const {
  auto const status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    return false;
  }
  GPUFEED_CUDA_TRY(status);
  return true;
}

void cuda_event::synchronize() const {
  GPUFEED_CUDA_TRY(cudaEventSynchronize(event_));
}

float elapsed_ms(cuda_event const& from, cuda_event const& to) {
  float ms = 0;
  GPUFEED_CUDA_TRY(cudaEventElapsedTime(&ms, from.native(), to.native()));
  return ms;
}

}  // namespace gpufeed::cuda
