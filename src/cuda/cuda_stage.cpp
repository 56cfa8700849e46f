// The CUDA path: pinned host slots, device slots, one non-blocking copy stream and, per slot,
// the events that order its reuse (see device_stage.hpp).

#include <cuda_runtime_api.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "gpufeed/cuda/buffer.hpp"
#include "gpufeed/cuda/device.hpp"
#include "gpufeed/cuda/error.hpp"
#include "gpufeed/cuda/event.hpp"
#include "gpufeed/cuda/stream.hpp"
#include "gpufeed/detail/device_stage.hpp"
#include "gpufeed/detail/host_resources.hpp"
#include "gpufeed/detail/latency_histogram.hpp"
#include "gpufeed/detail/nvtx.hpp"
#include "gpufeed/detail/slot.hpp"
#include "gpufeed/detail/transform_kernel.hpp"
#include "gpufeed/detail/units.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/log.hpp"

namespace gpufeed::detail {

namespace {

int checked_device(loader_options const& o) {
  auto const count = cuda::device_count();
  GPUFEED_EXPECTS(count > 0, std::string{"loader_options::target = placement::cuda, but CUDA "
                                         "has no usable device here ("} +
                                 cuda::unavailable_reason() + "); use placement::host");
  auto const device = o.device.value_or(0);
  GPUFEED_EXPECTS(device < count, "loader_options::device = " + std::to_string(device) +
                                      " does not exist; this process sees " +
                                      std::to_string(count) + " CUDA device(s) (0 to " +
                                      std::to_string(count - 1) + ")");
  return device;
}

// Refuses a ring that would pin more than the budget, before anything is allocated.
void check_budget(std::size_t slots, std::size_t slot_bytes, loader_options const& o) {
  auto const limit = pinned_budget(o);
  if (!limit) {
    return;  // pageable staging: nothing is pinned
  }
  auto const budget = *limit;
  auto const need = slots * slot_bytes;
  if (budget > 0 && need > budget) {
    throw out_of_memory{
        "gpufeed: the ring needs prefetch_depth " + std::to_string(slots) + " x " +
        mib_text(slot_bytes) + " per batch = " + mib_text(need) +
        " of pinned memory, over the budget of " + mib_text(budget) +
        (o.pinned_budget ? " (loader_options::pinned_budget)" : " (half the physical memory)") +
        "; lower prefetch_depth or batch_size, raise loader_options::pinned_budget, or set "
        "staging = staging_memory::pageable"};
  }
}

class cuda_stage final : public device_stage {
 public:
  // Expects `device` to be current (make_cuda_stage holds a guard around the construction).
  cuda_stage(int device, slot_layout const& host, std::size_t slots, loader_options const& o)
      : device_{device}, host_{host}, layout_{host, o.transforms}, staging_{o.staging} {
    check_budget(slots, host.slot_bytes(), o);
    cudaDeviceProp properties{};
    GPUFEED_CUDA_TRY(cudaGetDeviceProperties(&properties, device_));
    max_blocks_ = static_cast<unsigned>(properties.multiProcessorCount) * 8;
    upload_transform_constants();
    parts_.reserve(slots);
    for (std::size_t i = 0; i < slots; ++i) {
      parts_.push_back(
          std::make_unique<slot_part>(host.slot_bytes(), layout_.slot_bytes(), staging_));
    }
    logger()->info(
        "CUDA path on device {} ({}): {} slots x ({} {} host + {} device) = {} {} and {} "
        "device, one copy stream{}",
        device_, properties.name, slots, mib_text(host.slot_bytes()),
        staging_ == staging_memory::pinned ? "pinned" : "pageable", mib_text(layout_.slot_bytes()),
        mib_text(slots * host.slot_bytes()),
        staging_ == staging_memory::pinned ? "pinned" : "pageable",
        mib_text(slots * layout_.slot_bytes()),
        layout_.any_transform() ? ", transforms fused after the copy" : "");
  }

  ~cuda_stage() override {
    // The workers are joined. Wait for every queued copy and for the consumer's last use of
    // each slot, so that no memory is freed under a kernel or a copy.
    try {
      cuda::device_guard const guard{device_};
      GPUFEED_CUDA_LOG(cudaStreamSynchronize(copy_.native()));
      for (auto const& p : parts_) {
        GPUFEED_CUDA_LOG(cudaEventSynchronize(p->released.native()));
      }
      // Freed here, while the guard holds the stage's device, not by the members' destructors.
      parts_.clear();
      constants_ = cuda::device_buffer{};
    } catch (std::exception const& e) {
      try {
        logger()->error("gpufeed: CUDA teardown: {}", e.what());
      } catch (...) {
      }
    }
  }

  cuda_stage(cuda_stage const&) = delete;
  cuda_stage& operator=(cuda_stage const&) = delete;

  std::byte* host_memory(std::size_t id) const noexcept override { return parts_[id]->host; }
  std::byte* device_memory(std::size_t id) const noexcept override {
    return parts_[id]->device.data();
  }
  device_layout const& layout() const noexcept override { return layout_; }
  int device() const noexcept override { return device_; }

  void bind_worker_thread() override { GPUFEED_CUDA_TRY(cudaSetDevice(device_)); }

  void wait_host_free(std::size_t id) override {
    auto& p = *parts_[id];
    if (!p.copy_pending.load(std::memory_order_acquire)) {
      return;
    }
    cuda::device_guard const guard{device_};
    if (!p.done.done()) {
      nvtx_range const range{"gpufeed: wait for copy"};
      auto const from = steady_ns();
      p.done.synchronize();
      host_wait_ns_.fetch_add(steady_ns() - from, std::memory_order_relaxed);
    }
    // One of the workers attached reads the copy's timing. A worker that attached late may get
    // here after the batch it came to fill was completed and copied by others: that newer copy
    // may still be running (done.done() is false again), and it is not this worker's to wait
    // for, since it has no sample left to write.
    std::lock_guard const lock{p.timing_mutex};
    if (p.copy_pending.load(std::memory_order_relaxed) && p.done.done()) {
      auto const h2d_ns = static_cast<std::int64_t>(cuda::elapsed_ms(p.start, p.copied) * 1e6f);
      auto const transform_ns =
          static_cast<std::int64_t>(cuda::elapsed_ms(p.copied, p.done) * 1e6f);
      h2d_ns_.fetch_add(h2d_ns, std::memory_order_relaxed);
      transform_ns_.fetch_add(transform_ns, std::memory_order_relaxed);
      h2d_time_.record(h2d_ns);  // per copy, for stats::h2d's percentiles
      transform_time_.record(transform_ns);
      timed_copies_.fetch_add(1, std::memory_order_relaxed);
      p.copy_pending.store(false, std::memory_order_release);
    }
  }

  void copy_async(std::size_t id, std::size_t samples) override {
    auto& p = *parts_[id];
    cuda::device_guard const guard{device_};
    auto const bytes = host_.used_bytes(samples);
    {
      nvtx_range const range{"gpufeed: H2D"};
      // The device half may still be read by the consumer's work on the previous batch in
      // this slot: wait for its release (a no-op for a slot never released).
      GPUFEED_CUDA_TRY(cudaStreamWaitEvent(copy_.native(), p.released.native(), 0));
      p.start.record(copy_.native());
      GPUFEED_CUDA_TRY(
          cudaMemcpyAsync(p.device.data(), p.host, bytes, cudaMemcpyHostToDevice, copy_.native()));
      p.copied.record(copy_.native());
    }
    if (layout_.any_transform()) {
      nvtx_range const range{"gpufeed: transform"};
      enqueue_transforms(p, samples);
    }
    {
      std::lock_guard const lock{p.timing_mutex};  // never half-recorded for wait_host_free
      p.done.record(copy_.native());
      p.copy_pending.store(true, std::memory_order_release);
    }
    h2d_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    copies_.fetch_add(1, std::memory_order_relaxed);
  }

  void hand_off(std::size_t id, stream_view consumer) override {
    auto& p = *parts_[id];
    cuda::device_guard const guard{device_};
    GPUFEED_CUDA_TRY(cudaStreamWaitEvent(consumer.native(), p.done.native(), 0));
    p.consumer = consumer.native();
  }

  void release(std::size_t id) noexcept override {
    auto& p = *parts_[id];
    // Null when the batch never reached a stream (its hand-off failed): nothing to wait for.
    auto const consumer = std::exchange(p.consumer, nullptr);
    if (consumer == nullptr) {
      return;
    }
    try {
      cuda::device_guard const guard{device_};
      p.released.record(consumer);
      return;
    } catch (std::exception const& e) {
      try {
        logger()->error(
            "gpufeed: could not record a batch's release on its stream ({}); waiting for the "
            "stream instead, so that the slot is not overwritten while in use",
            e.what());
      } catch (...) {
      }
    }
    GPUFEED_CUDA_LOG(cudaStreamSynchronize(consumer));
  }

  void add_to(stats& out) const override {
    out.staging = staging_ == staging_memory::pinned ? "pinned" : "pageable";
    out.device = device_;
    out.pinned_bytes = staging_ == staging_memory::pinned ? parts_.size() * host_.slot_bytes() : 0;
    out.device_bytes = parts_.size() * layout_.slot_bytes() + constants_.size();
    out.copies = copies_.load(std::memory_order_relaxed);
    out.h2d_bytes = h2d_bytes_.load(std::memory_order_relaxed);
    out.timed_copies = timed_copies_.load(std::memory_order_relaxed);
    out.h2d_s = static_cast<double>(h2d_ns_.load(std::memory_order_relaxed)) * 1e-9;
    out.transform_s = static_cast<double>(transform_ns_.load(std::memory_order_relaxed)) * 1e-9;
    out.copy_wait_s = static_cast<double>(host_wait_ns_.load(std::memory_order_relaxed)) * 1e-9;
    latency_counts h2d;
    h2d_time_.read_into(h2d);
    out.h2d = h2d.summary();
    latency_counts transform;
    transform_time_.read_into(transform);
    out.transform = transform.summary();
  }

 private:
  struct slot_part {
    slot_part(std::size_t host_bytes, std::size_t device_bytes, staging_memory staging)
        : device{device_bytes} {
      if (staging == staging_memory::pinned) {
        pinned = cuda::pinned_buffer{host_bytes};
        host = pinned.data();
      } else {
        pageable = allocate_resident(host_bytes, slot_layout::alignment, "a pageable ring slot");
        host = pageable.get();
      }
    }
    cuda::pinned_buffer pinned;
    aligned_bytes pageable;
    std::byte* host = nullptr;
    cuda::device_buffer device;
    cuda::cuda_event start{cuda::cuda_event::kind::timing};
    cuda::cuda_event copied{cuda::cuda_event::kind::timing};
    cuda::cuda_event done{cuda::cuda_event::kind::timing};  // after the transforms
    cuda::cuda_event released{};  // the consumer's last use of the device half
    std::atomic<bool> copy_pending{false};
    std::mutex timing_mutex;
    cudaStream_t consumer = nullptr;  // the stream of the current lease, null when none
  };

  void upload_transform_constants() {
    std::vector<float> values;
    for (std::size_t f = 0; f < layout_.fields(); ++f) {
      auto const& out = layout_.field(f);
      if (out.transformed) {
        values.insert(values.end(), out.mean.begin(), out.mean.end());
        values.insert(values.end(), out.inv_std.begin(), out.inv_std.end());
      }
    }
    if (values.empty()) {
      return;
    }
    constants_ = cuda::device_buffer{values.size() * sizeof(float)};
    GPUFEED_CUDA_TRY(cudaMemcpyAsync(constants_.data(), values.data(), constants_.size(),
                                     cudaMemcpyHostToDevice, copy_.native()));
    copy_.synchronize();  // construction only: `values` goes out of scope
  }

  void enqueue_transforms(slot_part& p, std::size_t samples) {
    auto const* constants = reinterpret_cast<float const*>(constants_.data());
    for (std::size_t f = 0; f < layout_.fields(); ++f) {
      auto const& out = layout_.field(f);
      if (!out.transformed) {
        continue;
      }
      transform_args args;
      args.in = reinterpret_cast<std::uint8_t const*>(p.device.data() + host_.field_offset(f));
      args.out = p.device.data() + out.device_offset;
      args.out_type = out.type;
      args.change = out.input_layout == out.output_layout   ? layout_change::none
                    : out.input_layout == image_layout::hwc ? layout_change::hwc_to_chw
                                                            : layout_change::chw_to_hwc;
      args.channels_last = out.input_layout == image_layout::hwc;
      args.samples = samples;
      args.channels = out.channels;
      args.pixels = out.pixels;
      args.scale = out.scale;
      args.mean = constants;
      args.inv_std = constants + out.channels;
      args.max_blocks = max_blocks_;
      transform_async(args, copy_.native());
      constants += 2 * out.channels;
    }
  }

  // Member order is teardown order reversed: the stream outlives the slots' memory and events.
  int device_;
  slot_layout const& host_;
  device_layout layout_;
  staging_memory staging_;
  unsigned max_blocks_ = 1024;
  cuda::cuda_stream copy_;
  cuda::device_buffer constants_;
  std::vector<std::unique_ptr<slot_part>> parts_;
  std::atomic<std::uint64_t> copies_{0};
  std::atomic<std::uint64_t> h2d_bytes_{0};
  std::atomic<std::uint64_t> timed_copies_{0};
  std::atomic<std::int64_t> h2d_ns_{0};
  std::atomic<std::int64_t> transform_ns_{0};
  latency_histogram h2d_time_;
  latency_histogram transform_time_;
  std::atomic<std::int64_t> host_wait_ns_{0};
};

}  // namespace

std::unique_ptr<device_stage> make_cuda_stage(slot_layout const& host, std::size_t slots,
                                              loader_options const& options) {
  auto const device = checked_device(options);
  cuda::device_guard const guard{device};  // the stream, events and memory go on `device`
  return std::make_unique<cuda_stage>(device, host, slots, options);
}

}  // namespace gpufeed::detail
