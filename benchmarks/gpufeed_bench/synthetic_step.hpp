#pragma once
// The training step `overlap` feeds: the step kernel (step_kernel.hpp) over every SM of the
// device, lasting a set number of microseconds. Its clock64 spin is calibrated against CUDA
// events at construction, since the SM clock the kernel counts is not the clock rate the device
// reports (boost).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda_device.hpp"
#include "gpufeed/cuda/buffer.hpp"
#include "step_kernel.hpp"

namespace gpufeed::bench {

class synthetic_step {
 public:
  /// Allocates the kernel's sink and calibrates on the current device (which must be `device`).
  synthetic_step(cuda_device_info const& device, double step_us);

  /// Enqueues one step reading `bytes` of device memory at `data` on `stream`.
  void launch(void const* data, std::size_t bytes, cudaStream_t stream) const;

  [[nodiscard]] double cycles_per_us() const noexcept { return cycles_per_us_; }
  [[nodiscard]] std::int64_t cycles() const noexcept { return args_.cycles; }

 private:
  // Seconds `cycles` of spin (no data) take, timed with events on a stream of their own.
  [[nodiscard]] double time_spin(std::int64_t cycles) const;

  gpufeed::cuda::device_buffer sink_;
  step_kernel_args args_;
  double cycles_per_us_ = 0;
};

}  // namespace gpufeed::bench
