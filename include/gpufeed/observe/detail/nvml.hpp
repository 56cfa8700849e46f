#pragma once
// NVML (NVIDIA's management library), loaded at run time with dlopen: gpufeed never links it,
// so machines without the NVIDIA driver, and containers that do not mount its libraries, still
// run everything else; every query then answers "unknown" (an empty optional).
//
// No CUDA here: devices are NVML's indices, which differ from CUDA's under CUDA_VISIBLE_DEVICES
// or CUDA_DEVICE_ORDER; map a CUDA device through its PCI bus id (`index_of`).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace gpufeed::detail {

/// Device memory as NVML counts it (the driver's reservations included).
struct nvml_memory {
  std::uint64_t used = 0;
  std::uint64_t total = 0;
};

/// One NVML session: initialized at construction, shut down at destruction. The queries are
/// thread-safe (NVML's own guarantee), so a sampling thread may share the object.
class nvml {
 public:
  /// Loads libnvidia-ml.so.1 and initializes it. When either fails, `available()` is false and
  /// the reason is logged, once per process. Throws nothing but std::bad_alloc.
  nvml();
  ~nvml();
  nvml(nvml const&) = delete;
  nvml& operator=(nvml const&) = delete;
  nvml(nvml&&) = delete;
  nvml& operator=(nvml&&) = delete;

  [[nodiscard]] bool available() const noexcept { return api_ != nullptr; }
  /// Why NVML is unavailable; empty when it is available.
  [[nodiscard]] std::string const& unavailable_reason() const noexcept { return reason_; }

  /// NVML's index of the device at `pci_bus_id` ("0000:65:00.0", as cudaDeviceGetPCIBusId
  /// writes it), if NVML knows that device.
  [[nodiscard]] std::optional<unsigned> index_of(std::string const& pci_bus_id) const;
  /// Percent (0-100) of NVML's last sample period (1/6 s to 1 s, by product) during which at
  /// least one kernel ran on device `index`.
  [[nodiscard]] std::optional<unsigned> utilization(unsigned index) const;
  [[nodiscard]] std::optional<nvml_memory> memory(unsigned index) const;
  [[nodiscard]] std::optional<std::string> name(unsigned index) const;

 private:
  struct api;  // the entry points, resolved with dlsym

  void* library_ = nullptr;
  std::unique_ptr<api const> api_;  // null when unavailable
  std::string reason_;
};

}  // namespace gpufeed::detail
