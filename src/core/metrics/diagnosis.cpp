#include "gpufeed/diagnosis.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <numeric>

namespace gpufeed {

namespace {

[[gnu::format(printf, 1, 2)]] std::string format(char const* pattern, ...) {
  char text[1024];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(text, sizeof text, pattern, args);
  va_end(args);
  return text;
}

double ms(double seconds) noexcept {
  return seconds * 1e3;
}

double percent(double fraction) noexcept {
  return fraction * 100.0;
}

// The run since the first batch, and the fractions the rules compare.
struct evidence {
  std::uint64_t batches = 0;  // next() calls that took a batch after the first
  double wall_s = 0;          // since the first batch
  double wait_s = 0;          // the consumer's waits since the first batch
  double stall = 0;           // wait_s / wall_s
  double step_s = 0;          // the consumer's own time per batch (outside next())
  double busy = 0;            // workers' time in dataset::read
  double slot_idle = 0;       // workers' time idle for want of a free slot
  double copy_idle = 0;       // workers' time waiting for a slot's copy to finish
  bool cuda = false;          // copies were timed
  double copy_s = 0;          // GPU time of one batch's copy and transforms
  double copy_busy = 0;       // copy_s per batch period
};

evidence gather(stats const& s) {
  evidence e;
  auto const taken = s.batches + s.failed_batches;
  e.batches = taken > 0 ? taken - 1 : 0;
  e.wall_s = std::max(s.wall_s - s.first_batch_s, 0.0);
  e.wait_s = std::max(s.consumer_wait_s - s.first_wait_s, 0.0);
  e.stall = s.steady_stall_fraction();
  if (e.batches > 0) {
    e.step_s = std::max(e.wall_s - e.wait_s, 0.0) / static_cast<double>(e.batches);
  }
  e.busy = s.worker_busy_fraction();
  auto const worker_time = static_cast<double>(s.workers) * s.wall_s;
  if (worker_time > 0) {
    e.slot_idle = s.slot_wait_s / worker_time;
    e.copy_idle = s.copy_wait_s / worker_time;
  }
  e.cuda = s.device >= 0 && s.timed_copies > 0;
  if (e.cuda) {
    e.copy_s = (s.h2d_s + s.transform_s) / static_cast<double>(s.timed_copies);
    auto const period = e.batches > 0 ? e.wall_s / static_cast<double>(e.batches) : 0.0;
    e.copy_busy = period > 0 ? e.copy_s / period : 0.0;
  }
  return e;
}

std::string gpu_busy_text(std::optional<gpu_utilization> const& gpu) {
  if (!gpu) {
    return "";
  }
  return format(", and the GPU was busy %.0f%%", gpu->mean_percent);
}

diagnosis gpu_bound(stats const& s, evidence const& e, std::optional<gpu_utilization> const& gpu) {
  std::string sentence = format(
      "The loader is not the bottleneck: the training step waited for data %.2f%% of the time "
      "(%.3f s of %.1f s; p99 %.2f ms per next()) and spent %.2f ms per batch itself",
      percent(e.stall), e.wait_s, e.wall_s, ms(s.consumer_wait.p99_s), ms(e.step_s));
  if (gpu && gpu->mean_percent < 30.0) {
    sentence += format(
        ", yet the GPU was busy only %.0f%%: the time goes to the step's own host-side work "
        "(launches, synchronization, logging), not to loading; a larger batch could be tried "
        "(suggested, never applied)",
        gpu->mean_percent);
  } else {
    // On the host path nothing says a GPU is there: the suggestion stays about the step.
    sentence += gpu_busy_text(gpu) + ": the step sets the pace, so a larger batch could be tried" +
                (s.device >= 0 ? " to use the GPU better" : "") + " (suggested, never applied)";
  }
  return {bottleneck::gpu_bound, sentence + "."};
}

diagnosis copy_bound(stats const& s, evidence const& e, std::optional<gpu_utilization> const& gpu) {
  return {
      bottleneck::copy_bound,
      format("Copy-bound: each batch's host-to-device copy and GPU transform take %.2f ms "
             "(H2D %.2f ms, transform %.2f ms; p99 copy %.2f ms), %.0f%% of the %.2f ms "
             "between batches, the training step waited for data %.1f%% of the time and "
             "workers waited %.0f%% of theirs for copies to finish%s: send uint8 and convert "
             "on the GPU with a field_transform, keep the staging pinned (now %s), or use "
             "larger batches.",
             ms(e.copy_s), ms(s.h2d_s / static_cast<double>(s.timed_copies)),
             ms(s.transform_s / static_cast<double>(s.timed_copies)), ms(s.h2d.p99_s),
             percent(e.copy_busy),
             ms(e.batches > 0 ? e.wall_s / static_cast<double>(e.batches) : 0.0), percent(e.stall),
             percent(e.copy_idle), gpu_busy_text(gpu).c_str(), s.staging.c_str())};
}

diagnosis input_bound(stats const& s, evidence const& e,
                      std::optional<gpu_utilization> const& gpu) {
  return {bottleneck::input_bound,
          format("Input-bound: the training step waited for data %.1f%% of the time (p50 %.2f "
                 "ms, p99 %.2f ms per next())%s while the %u workers spent %.0f%% of their time "
                 "in dataset::read (%.3f ms per sample, p99 %.3f ms) and only %.0f%% waiting for "
                 "a free slot: add workers (now %u) if cores are free, cache decoded samples, or "
                 "make reading and decoding lighter.",
                 percent(e.stall), ms(s.consumer_wait.p50_s), ms(s.consumer_wait.p99_s),
                 gpu_busy_text(gpu).c_str(), s.workers, percent(e.busy), ms(s.read.mean_s()),
                 ms(s.read.p99_s), percent(e.slot_idle), s.workers)};
}

diagnosis ring_too_shallow(stats const& s, evidence const& e,
                           std::optional<gpu_utilization> const& gpu) {
  return {bottleneck::ring_too_shallow,
          format("Ring too shallow: the training step waited for data %.1f%% of the time (p50 "
                 "%.2f ms, p99 %.2f ms per next())%s while workers sat idle %.0f%% of their time "
                 "with all %zu slots taken and spent only %.0f%% reading: raise prefetch_depth "
                 "(now %zu), or release batches sooner.",
                 percent(e.stall), ms(s.consumer_wait.p50_s), ms(s.consumer_wait.p99_s),
                 gpu_busy_text(gpu).c_str(), percent(e.slot_idle), s.ring_slots, percent(e.busy),
                 s.ring_slots)};
}

}  // namespace

char const* to_string(bottleneck kind) noexcept {
  switch (kind) {
    case bottleneck::not_enough_data:
      return "not_enough_data";
    case bottleneck::gpu_bound:
      return "gpu_bound";
    case bottleneck::input_bound:
      return "input_bound";
    case bottleneck::copy_bound:
      return "copy_bound";
    case bottleneck::ring_too_shallow:
      return "ring_too_shallow";
    case bottleneck::unknown:
      return "unknown";
    case bottleneck::gil_bound:
      return "gil_bound";
  }
  return "unknown";
}

diagnosis diagnose(stats const& s, std::optional<gpu_utilization> gpu) {
  auto const e = gather(s);
  if (s.first_batch_s <= 0 || e.batches < diagnosis_min_batches || e.wall_s <= 0) {
    return {bottleneck::not_enough_data,
            format("Not enough data to judge yet: %llu batches after the first (%llu needed).",
                   static_cast<unsigned long long>(e.batches),
                   static_cast<unsigned long long>(diagnosis_min_batches))};
  }
  // Copies are asynchronous: a saturated copy engine need not make next() wait on the host.
  if (e.cuda && e.copy_busy >= 0.8) {
    return copy_bound(s, e, gpu);
  }
  if (e.stall < diagnosis_stall_threshold) {
    return gpu_bound(s, e, gpu);
  }
  if (e.cuda && (e.copy_busy >= 0.5 || e.copy_idle >= 0.25)) {
    return copy_bound(s, e, gpu);
  }
  if (e.busy >= 0.5 && e.slot_idle < 0.25) {
    return input_bound(s, e, gpu);
  }
  // The p99 judges bursts only where the first batch's wait (workers starting, files opening)
  // cannot be it: among fewer than burst_min_waits waits it is at or above the p99.
  bool const bursty =
      s.consumer_wait.count >= burst_min_waits &&
      (s.consumer_wait.p50_s > 0 ? s.consumer_wait.p99_s >= 10 * s.consumer_wait.p50_s
                                 : s.consumer_wait.p99_s > 0);
  if (e.slot_idle >= 0.25 || (bursty && e.busy < 0.5)) {
    return ring_too_shallow(s, e, gpu);
  }
  return {bottleneck::unknown,
          format("The training step waited for data %.1f%% of the time but no stage stands out "
                 "(workers reading %.0f%% of their time, idle for a free slot %.0f%%; p50 %.2f "
                 "ms, p99 %.2f ms per next())%s: record a trace (loader_options::trace_events) "
                 "to see where the time goes.",
                 percent(e.stall), percent(e.busy), percent(e.slot_idle), ms(s.consumer_wait.p50_s),
                 ms(s.consumer_wait.p99_s), gpu_busy_text(gpu).c_str())};
}

std::optional<std::string> low_utilization_warning(std::span<double const> utilization_percent,
                                                   stats const& s, double threshold_percent) {
  if (utilization_percent.empty()) {
    return std::nullopt;
  }
  auto const mean = std::accumulate(utilization_percent.begin(), utilization_percent.end(), 0.0) /
                    static_cast<double>(utilization_percent.size());
  if (mean >= threshold_percent) {
    return std::nullopt;
  }
  auto const d = diagnose(s, gpu_utilization{mean, 0.0});
  return format("GPU utilization averaged %.0f%% over the last %zu samples (below %.0f%%): ", mean,
                utilization_percent.size(), threshold_percent) +
         d.sentence;
}

}  // namespace gpufeed
