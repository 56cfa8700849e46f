#include "gpufeed/stats.hpp"

#include <cstdio>

namespace gpufeed {

std::string stats::to_string() const {
  char line[512];
  std::snprintf(line, sizeof line,
                "%llu batches, %llu samples in %.2f s (%.0f samples/s, %.1f MB/s); stall %.1f%%; "
                "read %.2f s over %u workers, slot wait %.2f s; ring %.1f/%zu ready on average; "
                "skipped %llu",
                static_cast<unsigned long long>(batches), static_cast<unsigned long long>(samples),
                wall_s, samples_per_s(), bytes_per_s() / 1e6, 100.0 * stall_fraction(), read_s,
                workers, slot_wait_s, ring_ready_mean, ring_slots,
                static_cast<unsigned long long>(skipped));
  std::string out = line;
  if (device >= 0) {
    std::snprintf(line, sizeof line,
                  "; CUDA device %d, %s staging: %llu copies, %.1f MB, H2D %.3f s and transform "
                  "%.3f s of GPU time over %llu timed copies, workers waited %.3f s for copies",
                  device, staging.c_str(), static_cast<unsigned long long>(copies),
                  static_cast<double>(h2d_bytes) / 1e6, h2d_s, transform_s,
                  static_cast<unsigned long long>(timed_copies), copy_wait_s);
    out += line;
  }
  return out;
}

}  // namespace gpufeed
