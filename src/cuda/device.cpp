#include "gpufeed/cuda/device.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "gpufeed/cuda/error.hpp"

namespace gpufeed::cuda {

namespace {

bool driver_library_loads() noexcept {
  void* const driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) return false;
  dlclose(driver);
  return true;
}

}  // namespace

device_guard::device_guard(int device) : device_{device} {
  GPUFEED_CUDA_TRY(cudaGetDevice(&previous_));
  if (previous_ != device_) {
    GPUFEED_CUDA_TRY(cudaSetDevice(device_));
  }
}

device_guard::~device_guard() {
  if (previous_ != device_) {
    GPUFEED_CUDA_LOG(cudaSetDevice(previous_));
  }
}

int device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

char const* unavailable_reason() noexcept {
  int count = 0;
  auto const status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    // The runtime says "driver version is insufficient" also when there is no driver at all:
    // a machine without NVIDIA's driver is told so.
    if (status == cudaErrorInsufficientDriver && !driver_library_loads()) {
      return "no NVIDIA driver is installed (libcuda.so.1 was not found)";
    }
    return cudaGetErrorString(status);
  }
  return count > 0 ? "" : "no CUDA device is present";
}

}  // namespace gpufeed::cuda
