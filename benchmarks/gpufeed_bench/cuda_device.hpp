#pragma once
// The CUDA device a GPU subcommand measures: checked up front, so that a machine without one
// gets a one-line answer instead of a loader error, and named in the report.

#include <string>

#include "bench_json.hpp"

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

[[nodiscard]] json to_json(cuda_device_info const& device);

}  // namespace gpufeed::bench
