#pragma once
// What one timed run of a peer loader (gpufeed, libtorch's C++ loader, PyTorch's Python loader)
// delivered in `gpufeed-bench compare`.

#include <cstdint>

#include "bench_json.hpp"

namespace gpufeed::bench {

struct peer_run {
  double seconds = 0;             ///< wall time of the timed batches (after the warm-up)
  std::uint64_t batches = 0;      ///< batches delivered in that time
  std::uint64_t samples = 0;      ///< samples delivered in that time
  std::uint64_t bytes = 0;        ///< sample bytes delivered (the dataset's fields, as stored)
  std::uint64_t skipped = 0;      ///< samples left out under --on-error skip
  json details = json::object();  ///< peer-specific figures (versions, epochs crossed, ...)
};

}  // namespace gpufeed::bench
