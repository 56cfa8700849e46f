#include "gpufeed/stream_view.hpp"

#include <cstdint>

#include "gpufeed/error.hpp"

namespace gpufeed {

stream_view::stream_view(native_type stream) : stream_{stream} {
  // cudaStreamLegacy is the handle 0x1; 0 is the legacy default stream itself.
  auto const value = reinterpret_cast<std::uintptr_t>(stream);
  GPUFEED_EXPECTS(value != 0 && value != 1,
                  "stream_view: the legacy default stream (0 / cudaStreamLegacy) is refused "
                  "because a 0 handle is usually a forgotten stream; pass the training step's own "
                  "stream (or cudaStreamPerThread), or stream_view::legacy_default() to mean the "
                  "legacy default stream");
}

stream_view stream_view::legacy_default() noexcept {
  // cudaStreamLegacy (0x1) rather than 0: the handle that means the legacy stream even in
  // programs compiled with per-thread default streams.
  return stream_view{reinterpret_cast<native_type>(std::uintptr_t{1}), unchecked{}};
}

}  // namespace gpufeed
