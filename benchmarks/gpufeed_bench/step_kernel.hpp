#pragma once
// The synthetic training step of `overlap`: one kernel over every SM that reads the whole batch
// (so it truly depends on the copy) and then spins on clock64 until a set number of cycles has
// passed since it began, so its duration is fixed whatever the data.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gpufeed::bench {

struct step_kernel_args {
  void const* data = nullptr;  ///< the batch in device memory
  std::size_t bytes = 0;
  std::int64_t cycles = 0;        ///< SM clock cycles the step lasts
  std::uint32_t* sink = nullptr;  ///< blocks x threads words: keeps the reads from being removed
  unsigned blocks = 1;
  unsigned threads = 256;
};

/// Enqueues one step on `stream`. @throws cuda_error if the launch fails.
void launch_step(step_kernel_args const& args, cudaStream_t stream);

}  // namespace gpufeed::bench
