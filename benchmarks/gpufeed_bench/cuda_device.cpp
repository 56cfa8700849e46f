#include "cuda_device.hpp"

#include <cuda_runtime_api.h>

#include <array>
#include <stdexcept>
#include <string>

#include "gpufeed/cuda/device.hpp"
#include "gpufeed/cuda/error.hpp"

namespace gpufeed::bench {

cuda_device_info open_cuda_device(int index) {
  int const count = gpufeed::cuda::device_count();
  if (count == 0) {
    throw std::runtime_error{std::string{"no CUDA device: "} + gpufeed::cuda::unavailable_reason()};
  }
  if (index < 0 || index >= count) {
    throw std::invalid_argument{"--device " + std::to_string(index) + ": this process sees " +
                                std::to_string(count) + " CUDA device(s), 0 to " +
                                std::to_string(count - 1)};
  }
  cudaDeviceProp properties{};
  GPUFEED_CUDA_TRY(cudaGetDeviceProperties(&properties, index));
  std::array<char, 32> bus_id{};
  GPUFEED_CUDA_TRY(cudaDeviceGetPCIBusId(bus_id.data(), static_cast<int>(bus_id.size()), index));
  cuda_device_info device;
  device.index = index;
  device.name = properties.name;
  device.pci_bus_id = bus_id.data();
  device.multiprocessors = properties.multiProcessorCount;
  return device;
}

json to_json(cuda_device_info const& device) {
  return {{"index", device.index},
          {"name", device.name},
          {"pci_bus_id", device.pci_bus_id},
          {"multiprocessors", device.multiprocessors}};
}

}  // namespace gpufeed::bench
