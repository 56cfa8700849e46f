#pragma once
// When each training step of a run began and ended on the GPU, from CUDA timing events: gives
// the GPU's busy time and the idle gaps between steps without stopping the stream to look.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "gpufeed/cuda/event.hpp"

namespace gpufeed::bench {

/// A run's steps as the GPU saw them. Times in seconds.
struct step_summary {
  double span_s = 0;            ///< first step's start to last step's end
  double gaps_s = 0;            ///< sum of the idle times between consecutive steps
  double max_gap_s = 0;         ///< the longest of them
  std::vector<double> step_us;  ///< each step's duration
};

class step_timeline {
 public:
  /// Two timing events per step, created up front on the current device so that the measured
  /// loop creates none.
  explicit step_timeline(std::size_t steps);

  /// Records step `step`'s start on `stream` (after whatever the stream must wait for first).
  void begin(std::size_t step, cudaStream_t stream) const;
  /// Records step `step`'s end on `stream`.
  void end(std::size_t step, cudaStream_t stream) const;
  /// Blocks the host until step `step` has ended on the GPU.
  void wait_for_end(std::size_t step) const;

  /// Steps [first, first + count), once the stream they ran on has been synchronized.
  [[nodiscard]] step_summary summarize(std::size_t first, std::size_t count) const;

 private:
  std::vector<gpufeed::cuda::cuda_event> begin_;
  std::vector<gpufeed::cuda::cuda_event> end_;
};

}  // namespace gpufeed::bench
