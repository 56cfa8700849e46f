#pragma once
/// @file
/// @brief `cuda_error` and the macros every CUDA call in gpufeed goes through.
///
/// @code
/// GPUFEED_CUDA_TRY(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream));
/// GPUFEED_CUDA_LOG(cudaStreamDestroy(stream));  // in destructors: logs, never throws
/// @endcode

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace gpufeed {

/// @brief A CUDA runtime call failed. The message has the call, file:line, the error's name and
/// CUDA's description of it.
class cuda_error : public std::runtime_error {
 public:
  cuda_error(cudaError_t code, std::string const& message)
      : std::runtime_error{message}, code_{code} {}
  /// @brief The CUDA error code.
  [[nodiscard]] cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

namespace detail {
/// Clears the sticky last error, then throws cuda_error (out_of_memory for allocations).
[[noreturn]] void throw_cuda_error(cudaError_t code, char const* call, char const* file, int line);
/// Logs a failed call made where throwing is not allowed; tolerates cudaErrorCudartUnloading
/// (the runtime is already gone at process exit) silently.
void log_cuda_error(cudaError_t code, char const* call, char const* file, int line) noexcept;
}  // namespace detail

}  // namespace gpufeed

/// @brief Calls `call`; throws `gpufeed::cuda_error` (or `gpufeed::out_of_memory` for
/// cudaErrorMemoryAllocation) if it does not return cudaSuccess.
#define GPUFEED_CUDA_TRY(call)                                                         \
  do {                                                                                 \
    cudaError_t const gpufeed_status_ = (call);                                        \
    if (gpufeed_status_ != cudaSuccess) {                                              \
      ::gpufeed::detail::throw_cuda_error(gpufeed_status_, #call, __FILE__, __LINE__); \
    }                                                                                  \
  } while (false)

/// @brief Calls `call` and logs a failure instead of throwing: for destructors and noexcept paths.
#define GPUFEED_CUDA_LOG(call)                                                       \
  do {                                                                               \
    cudaError_t const gpufeed_status_ = (call);                                      \
    if (gpufeed_status_ != cudaSuccess) {                                            \
      ::gpufeed::detail::log_cuda_error(gpufeed_status_, #call, __FILE__, __LINE__); \
    }                                                                                \
  } while (false)
