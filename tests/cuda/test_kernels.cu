#include "test_kernels.hpp"

namespace gpufeed::test {

namespace {
__global__ void checksum_kernel(unsigned char const* data, std::size_t bytes,
                                unsigned long long* sum) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < bytes;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    local += data[i];
  }
  atomicAdd(sum, local);
}

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Wall-clock nanoseconds (%globaltimer), so the spin does not depend on the SM clock.
__global__ void spin_kernel(unsigned long long nanoseconds) {
  auto const start = global_ns();
  while (global_ns() - start < nanoseconds) {
  }
}
}  // namespace

void checksum_async(void const* data, std::size_t bytes, unsigned long long* sum,
                    cudaStream_t stream) {
  checksum_kernel<<<64, 256, 0, stream>>>(static_cast<unsigned char const*>(data), bytes, sum);
}

void spin_async(unsigned microseconds, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(1000ull * microseconds);
}

}  // namespace gpufeed::test
