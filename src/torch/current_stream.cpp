#include "gpufeed/torch/current_stream.hpp"

#include "gpufeed/error.hpp"

#if GPUFEED_TORCH_WITH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace gpufeed::torch::detail {

bool torch_has_cuda() noexcept {
  return GPUFEED_TORCH_WITH_CUDA != 0;
}

stream_view current_stream(int device) {
#if GPUFEED_TORCH_WITH_CUDA
  auto const stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device));
  auto* const native = static_cast<stream_view::native_type>(stream.stream());
  return native == nullptr ? stream_view::legacy_default() : stream_view{native};
#else
  (void)device;
  throw logic_error{"gpufeed::torch: this build has no CUDA (gpufeed or libtorch without it)"};
#endif
}

}  // namespace gpufeed::torch::detail
