#pragma once
// The CUDA device a GPU subcommand measures: checked up front, so that a machine without one
// gets a one-line answer instead of a loader error, and named in the report.

#include <optional>
#include <string>

#include "bench_json.hpp"

namespace gpufeed::detail {
class nvml;
}

namespace gpufeed::bench {

struct cuda_device_info {
  int index = 0;
  std::string name;        ///< cudaGetDeviceProperties' name
  std::string pci_bus_id;  ///< "0000:65:00.0"
  int multiprocessors = 0;
};

/// Looks up CUDA device `index`.
/// @throws std::runtime_error "no CUDA device: <reason>" when CUDA has no usable device, and a
/// message naming the valid range when `index` is past the last one.
[[nodiscard]] cuda_device_info open_cuda_device(int index);

/// NVML's index of `device`, by PCI bus id (CUDA and NVML number devices differently under
/// CUDA_VISIBLE_DEVICES); by CUDA's index if NVML does not know the bus id; none without NVML.
[[nodiscard]] std::optional<unsigned> nvml_index_of(gpufeed::detail::nvml const& nvml,
                                                    cuda_device_info const& device);

[[nodiscard]] json to_json(cuda_device_info const& device);

}  // namespace gpufeed::bench
