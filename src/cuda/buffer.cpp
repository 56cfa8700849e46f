#include "gpufeed/cuda/buffer.hpp"

#include <cuda_runtime_api.h>

#include <atomic>
#include <string>
#include <utility>

#include "core/units.hpp"
#include "gpufeed/cuda/error.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed::cuda {

using detail::mib_text;

namespace {
std::atomic<std::size_t> allocations{0};

}  // namespace

std::size_t allocation_count() noexcept {
  return allocations.load(std::memory_order_relaxed);
}

pinned_buffer::pinned_buffer(std::size_t bytes) : size_{bytes} {
  void* p = nullptr;
  auto const status = cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocPortable);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw out_of_memory{"gpufeed: cudaHostAlloc of " + mib_text(bytes) + " (" +
                        std::to_string(bytes) +
                        " bytes) of pinned memory failed: " + cudaGetErrorString(status) +
                        ". Lower batch_size or prefetch_depth, raise the locked-memory limit "
                        "(ulimit -l), or set staging = staging_memory::pageable"};
  }
  data_ = static_cast<std::byte*>(p);
  allocations.fetch_add(1, std::memory_order_relaxed);
}

pinned_buffer::~pinned_buffer() {
  if (data_ != nullptr) {
    GPUFEED_CUDA_LOG(cudaFreeHost(data_));
  }
}

pinned_buffer::pinned_buffer(pinned_buffer&& other) noexcept
    : data_{std::exchange(other.data_, nullptr)}, size_{std::exchange(other.size_, 0)} {}

pinned_buffer& pinned_buffer::operator=(pinned_buffer&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  return *this;
}

registered_host_memory::registered_host_memory(std::byte* data, std::size_t bytes) {
  auto const status = cudaHostRegister(data, bytes == 0 ? 1 : bytes, cudaHostRegisterPortable);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw out_of_memory{"gpufeed: cudaHostRegister of " + mib_text(bytes) + " (" +
                        std::to_string(bytes) +
                        " bytes) of shared memory failed: " + cudaGetErrorString(status) +
                        ". Lower batch_size or prefetch_depth, raise the locked-memory limit "
                        "(ulimit -l), or set staging = staging_memory::pageable"};
  }
  data_ = data;
  allocations.fetch_add(1, std::memory_order_relaxed);
}

registered_host_memory::~registered_host_memory() {
  if (data_ != nullptr) {
    GPUFEED_CUDA_LOG(cudaHostUnregister(data_));
  }
}

registered_host_memory::registered_host_memory(registered_host_memory&& other) noexcept
    : data_{std::exchange(other.data_, nullptr)} {}

registered_host_memory& registered_host_memory::operator=(registered_host_memory&& other) noexcept {
  std::swap(data_, other.data_);
  return *this;
}

device_buffer::device_buffer(std::size_t bytes) : size_{bytes} {
  void* p = nullptr;
  auto const status = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    std::size_t free = 0;
    std::size_t total = 0;
    (void)cudaMemGetInfo(&free, &total);
    (void)cudaGetLastError();
    throw out_of_memory{"gpufeed: cudaMalloc of " + mib_text(bytes) + " of device memory failed (" +
                        cudaGetErrorString(status) + "; " + mib_text(free) + " free of " +
                        mib_text(total) + "). Lower batch_size or prefetch_depth"};
  }
  data_ = static_cast<std::byte*>(p);
  allocations.fetch_add(1, std::memory_order_relaxed);
}

device_buffer::~device_buffer() {
  if (data_ != nullptr) {
    GPUFEED_CUDA_LOG(cudaFree(data_));
  }
}

device_buffer::device_buffer(device_buffer&& other) noexcept
    : data_{std::exchange(other.data_, nullptr)}, size_{std::exchange(other.size_, 0)} {}

device_buffer& device_buffer::operator=(device_buffer&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  return *this;
}

}  // namespace gpufeed::cuda
