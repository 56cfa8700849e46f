// Kept apart from the host code: the only translation unit nvcc compiles for gpufeed-bench.

#include "gpufeed/cuda/error.hpp"
#include "step_kernel.hpp"

namespace gpufeed::bench {

namespace {

__global__ void step_kernel(unsigned char const* __restrict__ data, unsigned long long bytes,
                            long long cycles, std::uint32_t* __restrict__ sink) {
  long long const begin = clock64();
  auto const thread = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  auto const stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  std::uint32_t sum = 0;
  for (auto i = thread; i < bytes; i += stride) {
    sum += data[i];
  }
  while (clock64() - begin < cycles) {
  }
  sink[thread] = sum;
}

}  // namespace

void launch_step(step_kernel_args const& args, cudaStream_t stream) {
  step_kernel<<<args.blocks, args.threads, 0, stream>>>(
      static_cast<unsigned char const*>(args.data), args.bytes, args.cycles, args.sink);
  GPUFEED_CUDA_TRY(cudaGetLastError());
}

}  // namespace gpufeed::bench
