#include "gpufeed/stream_view.hpp"

#include <cstdint>

#include "gpufeed/error.hpp"

namespace gpufeed {

stream_view::stream_view(native_type stream) : stream_{stream} {
  // cudaStreamLegacy is the handle 0x1; 0 is the legacy default stream itself.
  auto const value = reinterpret_cast<std::uintptr_t>(stream);
  GPUFEED_EXPECTS(value != 0 && value != 1,
                  "stream_view: the legacy default stream (0 / cudaStreamLegacy) would serialize "
                  "the loader's copies with all other work; pass the training step's own stream, "
                  "or cudaStreamPerThread");
}

}  // namespace gpufeed
