#pragma once
/// @file
/// @brief The current CUDA device: a guard that restores it, and a probe for devices.

namespace gpufeed::cuda {

/// @brief Makes `device` current for its lifetime and restores the caller's device after.
///
/// Every gpufeed call that touches CUDA on the caller's thread holds one, so the loader never
/// changes which device the caller's own code runs on. Not copyable or movable.
class device_guard {
 public:
  /// @throws cuda_error if the device cannot be made current.
  explicit device_guard(int device);
  ~device_guard();
  device_guard(device_guard const&) = delete;
  device_guard& operator=(device_guard const&) = delete;

 private:
  int previous_ = 0;
  int device_ = 0;
};

/// @brief The number of CUDA devices this process can use; 0 when there is no driver or no
/// device (never throws).
[[nodiscard]] int device_count() noexcept;

/// @brief Why CUDA is unusable here (the CUDA error's text), or an empty string if a device is
/// present. For tests and tools that skip without a GPU.
[[nodiscard]] char const* unavailable_reason() noexcept;

}  // namespace gpufeed::cuda
