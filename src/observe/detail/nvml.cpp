#include "gpufeed/observe/detail/nvml.hpp"

#include <dlfcn.h>
#include <spdlog/spdlog.h>

#include <array>
#include <mutex>

#include "gpufeed/log.hpp"

namespace gpufeed::detail {

namespace {

// NVML's C types, declared here so that building needs no NVML header (nvml.h). The layouts
// are NVML's stable ABI: nvmlReturn_t is an int-sized enum whose success is 0, nvmlDevice_t an
// opaque pointer, nvmlUtilization_t and nvmlMemory_t (version 1) plain structs.
using nvml_return = int;
constexpr nvml_return nvml_success = 0;
struct nvml_device_st;
using nvml_device = nvml_device_st*;
struct nvml_utilization {
  unsigned gpu;
  unsigned memory;
};
struct nvml_memory_v1 {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr unsigned nvml_name_buffer = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE

constexpr char const* library_name = "libnvidia-ml.so.1";

template <class Function>
Function find(void* library, char const* name) noexcept {
  return reinterpret_cast<Function>(dlsym(library, name));
}

void say_unavailable_once(std::string const& reason) {
  static std::once_flag said;
  std::call_once(said, [&] {
    logger()->info("NVML unavailable ({}): GPU utilization and memory will not be reported",
                   reason);
  });
}

}  // namespace

struct nvml::api {
  nvml_return (*init)() = nullptr;
  nvml_return (*shutdown)() = nullptr;
  char const* (*error_string)(nvml_return) = nullptr;
  nvml_return (*by_index)(unsigned, nvml_device*) = nullptr;
  nvml_return (*by_pci_bus_id)(char const*, nvml_device*) = nullptr;
  nvml_return (*get_index)(nvml_device, unsigned*) = nullptr;
  nvml_return (*utilization)(nvml_device, nvml_utilization*) = nullptr;
  nvml_return (*memory)(nvml_device, nvml_memory_v1*) = nullptr;
  nvml_return (*name)(nvml_device, char*, unsigned) = nullptr;

  [[nodiscard]] std::optional<nvml_device> device(unsigned index) const noexcept {
    nvml_device handle = nullptr;
    if (by_index(index, &handle) != nvml_success) return std::nullopt;
    return handle;
  }
};

nvml::nvml() {
  library_ = dlopen(library_name, RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    char const* const error = dlerror();
    reason_ = error != nullptr ? error : std::string{"cannot load "} + library_name;
    say_unavailable_once(reason_);
    return;
  }
  auto entry = std::make_unique<api>();
  entry->init = find<decltype(api::init)>(library_, "nvmlInit_v2");
  entry->shutdown = find<decltype(api::shutdown)>(library_, "nvmlShutdown");
  entry->error_string = find<decltype(api::error_string)>(library_, "nvmlErrorString");
  entry->by_index = find<decltype(api::by_index)>(library_, "nvmlDeviceGetHandleByIndex_v2");
  entry->by_pci_bus_id =
      find<decltype(api::by_pci_bus_id)>(library_, "nvmlDeviceGetHandleByPciBusId_v2");
  entry->get_index = find<decltype(api::get_index)>(library_, "nvmlDeviceGetIndex");
  entry->utilization = find<decltype(api::utilization)>(library_, "nvmlDeviceGetUtilizationRates");
  entry->memory = find<decltype(api::memory)>(library_, "nvmlDeviceGetMemoryInfo");
  entry->name = find<decltype(api::name)>(library_, "nvmlDeviceGetName");
  if (entry->init == nullptr || entry->shutdown == nullptr || entry->by_index == nullptr ||
      entry->by_pci_bus_id == nullptr || entry->get_index == nullptr ||
      entry->utilization == nullptr || entry->memory == nullptr || entry->name == nullptr) {
    reason_ = std::string{library_name} + " lacks an entry point gpufeed needs (driver too old)";
  } else if (auto const status = entry->init(); status != nvml_success) {
    reason_ = std::string{"nvmlInit_v2 failed: "} + (entry->error_string != nullptr
                                                         ? entry->error_string(status)
                                                         : "error " + std::to_string(status));
  } else {
    api_ = std::move(entry);
    return;
  }
  dlclose(library_);
  library_ = nullptr;
  say_unavailable_once(reason_);
}

nvml::~nvml() {
  if (api_ != nullptr) {
    // Nothing to do about a failed shutdown at teardown; NVML keeps no state that outlives us.
    (void)api_->shutdown();
  }
  if (library_ != nullptr) dlclose(library_);
}

std::optional<unsigned> nvml::index_of(std::string const& pci_bus_id) const {
  if (api_ == nullptr) return std::nullopt;
  nvml_device handle = nullptr;
  if (api_->by_pci_bus_id(pci_bus_id.c_str(), &handle) != nvml_success) return std::nullopt;
  unsigned index = 0;
  if (api_->get_index(handle, &index) != nvml_success) return std::nullopt;
  return index;
}

std::optional<unsigned> nvml::utilization(unsigned index) const {
  if (api_ == nullptr) return std::nullopt;
  auto const handle = api_->device(index);
  nvml_utilization rates{};
  if (!handle || api_->utilization(*handle, &rates) != nvml_success) return std::nullopt;
  return rates.gpu;
}

std::optional<nvml_memory> nvml::memory(unsigned index) const {
  if (api_ == nullptr) return std::nullopt;
  auto const handle = api_->device(index);
  nvml_memory_v1 info{};
  if (!handle || api_->memory(*handle, &info) != nvml_success) return std::nullopt;
  return nvml_memory{.used = info.used, .total = info.total};
}

std::optional<std::string> nvml::name(unsigned index) const {
  if (api_ == nullptr) return std::nullopt;
  auto const handle = api_->device(index);
  std::array<char, nvml_name_buffer> text{};
  if (!handle || api_->name(*handle, text.data(), nvml_name_buffer) != nvml_success) {
    return std::nullopt;
  }
  return std::string{text.data()};
}

}  // namespace gpufeed::detail
