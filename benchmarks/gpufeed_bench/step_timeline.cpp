#include "step_timeline.hpp"

#include <algorithm>

namespace gpufeed::bench {

namespace {
double seconds_between(gpufeed::cuda::cuda_event const& from, gpufeed::cuda::cuda_event const& to) {
  return static_cast<double>(gpufeed::cuda::elapsed_ms(from, to)) * 1e-3;
}
}  // namespace

step_timeline::step_timeline(std::size_t steps) {
  begin_.reserve(steps);
  end_.reserve(steps);
  for (std::size_t i = 0; i < steps; ++i) {
    begin_.emplace_back(gpufeed::cuda::cuda_event::kind::timing);
    end_.emplace_back(gpufeed::cuda::cuda_event::kind::timing);
  }
}

void step_timeline::begin(std::size_t step, cudaStream_t stream) const {
  begin_.at(step).record(stream);
}

void step_timeline::end(std::size_t step, cudaStream_t stream) const {
  end_.at(step).record(stream);
}

void step_timeline::wait_for_end(std::size_t step) const {
  end_.at(step).synchronize();
}

step_summary step_timeline::summarize(std::size_t first, std::size_t count) const {
  step_summary summary;
  if (count == 0) return summary;
  summary.step_us.reserve(count);
  for (std::size_t i = first; i < first + count; ++i) {
    double const duration = seconds_between(begin_.at(i), end_.at(i));
    summary.step_us.push_back(duration * 1e6);
    if (i > first) {
      double const gap = seconds_between(end_.at(i - 1), begin_.at(i));
      summary.gaps_s += gap;
      summary.max_gap_s = std::max(summary.max_gap_s, gap);
    }
  }
  summary.span_s = seconds_between(begin_.at(first), end_.at(first + count - 1));
  return summary;
}

}  // namespace gpufeed::bench
