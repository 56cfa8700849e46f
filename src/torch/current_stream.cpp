#include "gpufeed/torch/current_stream.hpp"

#include <string>

#include "gpufeed/error.hpp"

#if GPUFEED_TORCH_WITH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace gpufeed::torch::detail {

bool torch_has_cuda() noexcept {
  return GPUFEED_TORCH_WITH_CUDA != 0;
}

namespace {
[[noreturn]] void no_cuda() {
  throw logic_error{"gpufeed::torch: this build has no CUDA (gpufeed or libtorch without it)"};
}

#if GPUFEED_TORCH_WITH_CUDA
stream_view view_of(c10::cuda::CUDAStream const& stream) {
  auto* const native = static_cast<stream_view::native_type>(stream.stream());
  return native == nullptr ? stream_view::legacy_default() : stream_view{native};
}
#endif
}  // namespace

stream_view current_stream(int device) {
#if GPUFEED_TORCH_WITH_CUDA
  return view_of(c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)));
#else
  (void)device;
  no_cuda();
#endif
}

stream_view cuda_stream_of(::c10::Stream stream, int device) {
  GPUFEED_EXPECTS(stream.device_type() == c10::DeviceType::CUDA,
                  "gpufeed::torch: use_on needs a CUDA stream; got a stream of " +
                      stream.device().str() + " for a batch on cuda:" + std::to_string(device));
  GPUFEED_EXPECTS(stream.device_index() == device,
                  "gpufeed::torch: use_on got a stream of " + stream.device().str() +
                      " for a batch on cuda:" + std::to_string(device) +
                      "; a stream can only wait for work of its own device: copy the tensors "
                      "with .to(device) first");
#if GPUFEED_TORCH_WITH_CUDA
  return view_of(c10::cuda::CUDAStream{c10::cuda::CUDAStream::UNCHECKED, stream});
#else
  no_cuda();
#endif
}

}  // namespace gpufeed::torch::detail
