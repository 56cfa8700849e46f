#include "gpufeed/cuda/error.hpp"

#include <spdlog/spdlog.h>

#include <string>

#include "gpufeed/error.hpp"
#include "gpufeed/log.hpp"

namespace gpufeed::detail {

namespace {
std::string describe(cudaError_t code, char const* call, char const* file, int line) {
  return std::string{"CUDA error "} + cudaGetErrorName(code) + " (" + cudaGetErrorString(code) +
         ") from " + call + " at " + file + ":" + std::to_string(line);
}
}  // namespace

void throw_cuda_error(cudaError_t code, char const* call, char const* file, int line) {
  (void)cudaGetLastError();  // clear a sticky non-fatal error so later calls are not blamed
  if (code == cudaErrorMemoryAllocation) {
    throw out_of_memory{describe(code, call, file, line)};
  }
  throw cuda_error{code, describe(code, call, file, line)};
}

void log_cuda_error(cudaError_t code, char const* call, char const* file, int line) noexcept {
  (void)cudaGetLastError();
  if (code == cudaErrorCudartUnloading) {
    return;  // process exit: the runtime released everything already
  }
  try {
    logger()->error("{}", describe(code, call, file, line));
  } catch (...) {
  }
}

}  // namespace gpufeed::detail
