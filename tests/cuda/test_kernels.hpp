#pragma once
// Kernels the CUDA suite runs on the consumer's stream, as a training step would.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gpufeed::test {

/// Adds every byte of [data, data + bytes) into *sum (device memory). Asynchronous.
void checksum_async(void const* data, std::size_t bytes, unsigned long long* sum,
                    cudaStream_t stream);
/// Keeps one thread busy for about `microseconds` on `stream`. Asynchronous.
void spin_async(unsigned microseconds, cudaStream_t stream);

}  // namespace gpufeed::test
