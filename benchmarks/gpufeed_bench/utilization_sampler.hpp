#pragma once
// Samples NVML's GPU utilization on a thread of its own while a run goes on, so that the
// measured loop never pays for the query.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace gpufeed::detail {
class nvml;
}

namespace gpufeed::bench {

/// What the sampler saw between start() and stop().
struct utilization_samples {
  std::vector<unsigned> percent;  ///< one per successful query
  std::size_t failed = 0;         ///< queries NVML refused
  /// Mean utilization as a fraction (0-1); none without a successful sample.
  [[nodiscard]] std::optional<double> mean_fraction() const;
};

class utilization_sampler {
 public:
  /// Samples NVML device `index` of `nvml` (which must outlive the sampler) every `period`;
  /// without an index (no NVML) it samples nothing.
  utilization_sampler(gpufeed::detail::nvml const& nvml, std::optional<unsigned> index,
                      std::chrono::milliseconds period);
  ~utilization_sampler();
  utilization_sampler(utilization_sampler const&) = delete;
  utilization_sampler& operator=(utilization_sampler const&) = delete;

  /// Starts a fresh series; the first sample is taken one period in, so that it covers the run.
  void start();
  /// Stops the thread and returns the series.
  utilization_samples stop();

 private:
  void loop();

  gpufeed::detail::nvml const& nvml_;
  std::optional<unsigned> index_;
  std::chrono::milliseconds period_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  utilization_samples samples_;
  std::thread thread_;
};

}  // namespace gpufeed::bench
