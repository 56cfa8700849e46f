#pragma once
// NVTX 3 ranges in the "gpufeed" domain, so Nsight Systems shows reads, batch completion, copies,
// transforms and consumer waits on the timeline. Header-only; without a profiler attached a
// range costs a few nanoseconds. Compiled out where the CUDA toolkit's headers are absent.

#if defined(GPUFEED_WITH_NVTX)
#include <nvtx3/nvToolsExt.h>
#endif

namespace gpufeed::detail {

#if defined(GPUFEED_WITH_NVTX)
inline nvtxDomainHandle_t nvtx_domain() noexcept {
  static nvtxDomainHandle_t const domain = nvtxDomainCreateA("gpufeed");
  return domain;
}

/// A range from construction to destruction, on the calling thread.
class nvtx_range {
 public:
  explicit nvtx_range(char const* name) noexcept {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = name;
    nvtxDomainRangePushEx(nvtx_domain(), &attributes);
  }
  ~nvtx_range() { nvtxDomainRangePop(nvtx_domain()); }
  nvtx_range(nvtx_range const&) = delete;
  nvtx_range& operator=(nvtx_range const&) = delete;
};
#else
class nvtx_range {
 public:
  explicit nvtx_range(char const*) noexcept {}
  nvtx_range(nvtx_range const&) = delete;
  nvtx_range& operator=(nvtx_range const&) = delete;
};
#endif

}  // namespace gpufeed::detail
