#include "overlap_feed.hpp"

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <vector>

#include "bench_clock.hpp"
#include "gpufeed/cuda/buffer.hpp"
#include "gpufeed/cuda/error.hpp"
#include "gpufeed/sample_layout.hpp"
#include "loader_pass.hpp"

namespace gpufeed::bench {

namespace {

// The loop every feed shares: `body(i, timed)` enqueues step i (recording its events on
// `timeline`); `started()` runs once, just before the first timed step. Ends with `finish()`,
// which must wait for the GPU. Returns the run without its feed-specific counts.
template <class Body, class Started, class Finish>
feed_run drive(feed_plan const& plan, step_timeline const& timeline, Body&& body, Started&& started,
               Finish&& finish) {
  auto const began = bench_clock::now();
  std::size_t i = 0;
  for (; i < plan.max_warmup &&
         (i < plan.warmup || seconds_between(began, bench_clock::now()) < plan.warmup_s);
       ++i) {
    body(i, false);
  }
  std::size_t const first = i;
  started();
  gpufeed::system_monitor monitor{plan.sampling};  // its first sample is one interval in
  auto const start = bench_clock::now();
  for (; i < first + plan.steps; ++i) body(i, true);
  finish();
  feed_run run;
  run.wall_s = seconds_between(start, bench_clock::now());
  monitor.stop();
  for (auto const& sample : monitor.history()) {
    if (sample.gpu_percent) {
      run.utilization.percent.push_back(*sample.gpu_percent);
    } else if (monitor.gpu_available()) {
      ++run.utilization.failed;
    }
  }
  run.gpu = timeline.summarize(first, plan.steps);
  return run;
}

}  // namespace

std::optional<double> utilization_samples::mean_fraction() const {
  if (percent.empty()) return std::nullopt;
  double sum = 0;
  for (auto const value : percent) sum += value;
  return sum / static_cast<double>(percent.size()) / 100.0;
}

feed_run run_loader_feed(gpufeed::loader& source, gpufeed::cuda::cuda_stream const& consumer,
                         synthetic_step const& step, feed_plan const& plan) {
  step_timeline const timeline{plan.max_warmup + plan.steps};
  double host_wait_s = 0;
  std::uint64_t samples = 0, bytes = 0;
  auto body = [&](std::size_t i, bool timed) {
    // A training loop that reads its loss stays this close to the GPU. Without a bound the
    // host would run ahead until the ring is full and then sit in next() while the GPU is
    // busy, which is no data stall.
    if (i >= plan.queue_steps) timeline.wait_for_end(i - plan.queue_steps);
    auto const asked = bench_clock::now();
    auto batch = next_batch(source);
    if (timed) host_wait_s += seconds_between(asked, bench_clock::now());
    auto const field = batch.field(0);
    timeline.begin(i, consumer.native());
    step.launch(field.data(), field.bytes(), consumer.native());
    timeline.end(i, consumer.native());
    if (timed) {
      samples += batch.size();
      bytes += field.bytes();
    }
    batch.release();  // records on the consumer stream: the slot is refilled after the step
  };
  auto run = drive(
      plan, timeline, body, [] {}, [&] { consumer.synchronize(); });
  run.host_wait_s = host_wait_s;
  run.samples = samples;
  run.bytes = bytes;
  return run;
}

feed_run run_resident_feed(std::size_t bytes, gpufeed::cuda::cuda_stream const& stream,
                           synthetic_step const& step, feed_plan const& plan) {
  gpufeed::cuda::device_buffer const device{bytes};
  GPUFEED_CUDA_TRY(cudaMemsetAsync(device.data(), 0x5a, bytes, stream.native()));
  step_timeline const timeline{plan.max_warmup + plan.steps};
  std::uint64_t moved = 0;
  auto body = [&](std::size_t i, bool timed) {
    if (i >= plan.queue_steps) timeline.wait_for_end(i - plan.queue_steps);
    timeline.begin(i, stream.native());
    step.launch(device.data(), bytes, stream.native());
    timeline.end(i, stream.native());
    if (timed) moved += bytes;
  };
  auto run = drive(
      plan, timeline, body, [] {}, [&] { stream.synchronize(); });
  run.bytes = moved;
  return run;
}

feed_run run_pageable_feed(gpufeed::dataset const& data, std::size_t batch_size,
                           synthetic_step const& step, feed_plan const& plan) {
  gpufeed::sample_layout const layout{data.spec(), batch_size};
  std::size_t const bytes = layout.used_bytes(batch_size);
  std::vector<std::byte> host(layout.bytes());  // ordinary pageable memory
  gpufeed::cuda::device_buffer const device{layout.bytes()};
  // The legacy default stream, as in code that never names a stream: cudaMemcpy and the step
  // are ordered on it, so a copy waits for the previous step and the step for its copy.
  cudaStream_t const stream = cudaStreamLegacy;
  step_timeline const timeline{plan.max_warmup + plan.steps};
  double host_wait_s = 0;
  std::uint64_t samples = 0, moved = 0;
  std::size_t index = 0;
  auto body = [&](std::size_t i, bool timed) {
    auto const asked = bench_clock::now();
    for (std::size_t s = 0; s < batch_size; ++s, index = (index + 1) % data.size()) {
      data.read(index, layout.view(host.data(), s), gpufeed::read_context{.index = index});
    }
    GPUFEED_CUDA_TRY(cudaMemcpy(device.data(), host.data(), bytes, cudaMemcpyHostToDevice));
    if (timed) host_wait_s += seconds_between(asked, bench_clock::now());
    timeline.begin(i, stream);
    step.launch(device.data(), bytes, stream);
    timeline.end(i, stream);
    if (timed) {
      samples += batch_size;
      moved += bytes;
    }
  };
  auto run = drive(
      plan, timeline, body, [] {}, [&] { GPUFEED_CUDA_TRY(cudaStreamSynchronize(stream)); });
  run.host_wait_s = host_wait_s;
  run.samples = samples;
  run.bytes = moved;
  return run;
}

}  // namespace gpufeed::bench
