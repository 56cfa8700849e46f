#include "synthetic_step.hpp"

#include <cmath>
#include <stdexcept>

#include "gpufeed/cuda/event.hpp"
#include "gpufeed/cuda/stream.hpp"

namespace gpufeed::bench {

namespace {
constexpr unsigned threads_per_block = 256;
constexpr std::int64_t probe_cycles = 1'000'000;  // about 1 ms at any current SM clock
constexpr double calibration_us = 20'000;         // long against the launch latency
}  // namespace

synthetic_step::synthetic_step(cuda_device_info const& device, double step_us) {
  if (!(step_us > 0)) throw std::invalid_argument{"--step-us must be positive"};
  args_.blocks = static_cast<unsigned>(device.multiprocessors > 0 ? device.multiprocessors : 1);
  args_.threads = threads_per_block;
  sink_ = gpufeed::cuda::device_buffer{std::size_t{args_.blocks} * args_.threads *
                                       sizeof(std::uint32_t)};
  args_.sink = reinterpret_cast<std::uint32_t*>(sink_.data());
  // The first launch loads the module and ramps the clock: time it, but keep only the second.
  (void)time_spin(probe_cycles);
  double const rough = static_cast<double>(probe_cycles) / (time_spin(probe_cycles) * 1e6);
  auto const long_cycles = static_cast<std::int64_t>(std::llround(rough * calibration_us));
  cycles_per_us_ = static_cast<double>(long_cycles) / (time_spin(long_cycles) * 1e6);
  args_.cycles = static_cast<std::int64_t>(std::llround(cycles_per_us_ * step_us));
}

void synthetic_step::launch(void const* data, std::size_t bytes, cudaStream_t stream) const {
  auto args = args_;
  args.data = data;
  args.bytes = bytes;
  launch_step(args, stream);
}

double synthetic_step::time_spin(std::int64_t cycles) const {
  gpufeed::cuda::cuda_stream const stream;
  gpufeed::cuda::cuda_event const start{gpufeed::cuda::cuda_event::kind::timing};
  gpufeed::cuda::cuda_event const stop{gpufeed::cuda::cuda_event::kind::timing};
  auto args = args_;
  args.cycles = cycles;
  start.record(stream.native());
  launch_step(args, stream.native());
  stop.record(stream.native());
  stop.synchronize();
  return static_cast<double>(gpufeed::cuda::elapsed_ms(start, stop)) * 1e-3;
}

}  // namespace gpufeed::bench
