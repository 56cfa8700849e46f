// The CUDA path: pinned host slots, device slots, one non-blocking copy stream and, per slot,
// the events that order its reuse (see device_stage.hpp).

#include <cuda_runtime_api.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
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

class cuda_stage final : public device_stage {
 public:
  // Expects `device` to be current (make_cuda_stage holds a guard around the construction).
  cuda_stage(int device, slot_layout const& host, std::size_t slots, std::size_t max_slots,
             loader_options const& o)
      : device_{device},
        host_{host},
        layout_{host, o.transforms},
        staging_{o.staging},
        budget_{pinned_budget(o)},
        budget_named_{o.pinned_budget.has_value()},
        capacity_{std::max(slots, max_slots)},
        parts_{std::make_unique<std::unique_ptr<slot_part>[]>(capacity_)} {
    check_budget(slots, host.slot_bytes());
    cudaDeviceProp properties{};
    GPUFEED_CUDA_TRY(cudaGetDeviceProperties(&properties, device_));
    max_blocks_ = static_cast<unsigned>(properties.multiProcessorCount) * 8;
    upload_transform_constants();
    for (std::size_t i = 0; i < slots; ++i) {
      parts_[i] = std::make_unique<slot_part>(host.slot_bytes(), layout_.slot_bytes(), staging_);
    }
    count_.store(slots, std::memory_order_release);
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
      auto const count = count_.load(std::memory_order_acquire);
      for (std::size_t i = 0; i < count; ++i) {
        auto const& p = *parts_[i];
        for (std::size_t r = 0; r < p.recorded; ++r) {
          GPUFEED_CUDA_LOG(cudaEventSynchronize(p.releases[r].native()));
        }
      }
      // Freed here, while the guard holds the stage's device, not by the members' destructors.
      for (std::size_t i = 0; i < count; ++i) {
        parts_[i].reset();
      }
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

  std::size_t add_slot() override {
    auto const id = count_.load(std::memory_order_relaxed);  // only the consumer adds slots
    GPUFEED_EXPECTS(id < capacity_, "the CUDA stage has room for " + std::to_string(capacity_) +
                                        " slots; the ring cannot grow further");
    check_budget(id + 1, host_.slot_bytes());
    cuda::device_guard const guard{device_};
    parts_[id] = std::make_unique<slot_part>(host_.slot_bytes(), layout_.slot_bytes(), staging_);
    count_.store(id + 1, std::memory_order_release);
    return id;
  }

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
      // this slot: wait for its release on every stream that used it (none for a new slot).
      for (std::size_t r = 0; r < p.recorded; ++r) {
        GPUFEED_CUDA_TRY(cudaStreamWaitEvent(copy_.native(), p.releases[r].native(), 0));
      }
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
    p.users.assign(1, consumer.native());
  }

  void use_on(std::size_t id, stream_view stream) override {
    auto& p = *parts_[id];
    if (std::find(p.users.begin(), p.users.end(), stream.native()) != p.users.end()) {
      return;  // already ordered after the copy, and its release will be recorded
    }
    cuda::device_guard const guard{device_};
    GPUFEED_CUDA_TRY(cudaStreamWaitEvent(stream.native(), p.done.native(), 0));
    p.users.push_back(stream.native());
  }

  void release(std::size_t id) noexcept override {
    auto& p = *parts_[id];
    // Empty when the batch never reached a stream (its hand-off failed): nothing to wait for.
    std::size_t recorded = 0;
    for (auto* stream : p.users) {
      try {
        cuda::device_guard const guard{device_};
        if (p.releases.size() == recorded) {
          p.releases.emplace_back();  // the first lease used on this many streams
        }
        p.releases[recorded].record(stream);
        ++recorded;
        continue;
      } catch (std::exception const& e) {
        try {
          logger()->error(
              "gpufeed: could not record a batch's release on its stream ({}); waiting for the "
              "stream instead, so that the slot is not overwritten while in use",
              e.what());
        } catch (...) {
        }
      }
      GPUFEED_CUDA_LOG(cudaStreamSynchronize(stream));
    }
    p.recorded = recorded;
    p.users.clear();
  }

  void add_to(stats& out) const override {
    out.staging = staging_ == staging_memory::pinned ? "pinned" : "pageable";
    out.device = device_;
    auto const count = count_.load(std::memory_order_acquire);
    out.pinned_bytes = staging_ == staging_memory::pinned ? count * host_.slot_bytes() : 0;
    out.device_bytes = count * layout_.slot_bytes() + constants_.size();
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
    std::atomic<bool> copy_pending{false};
    std::mutex timing_mutex;
    // The streams of the current lease (the one next() handed it to, then any use_on added),
    // and the events recorded on them at its release: the next copy waits for the first
    // `recorded`. Events are made on first need and kept, so a steady state allocates nothing.
    std::vector<cudaStream_t> users;
    std::vector<cuda::cuda_event> releases;
    std::size_t recorded = 0;
  };

  // Refuses `slots` slots when they would pin more than the budget, before anything is
  // allocated.
  void check_budget(std::size_t slots, std::size_t slot_bytes) const {
    if (!budget_) {
      return;  // pageable staging: nothing is pinned
    }
    auto const need = slots * slot_bytes;
    if (*budget_ > 0 && need > *budget_) {
      throw out_of_memory{
          "gpufeed: the ring needs " + std::to_string(slots) + " slots x " + mib_text(slot_bytes) +
          " per batch = " + mib_text(need) + " of pinned memory, over the budget of " +
          mib_text(*budget_) +
          (budget_named_ ? " (loader_options::pinned_budget)" : " (half the physical memory)") +
          "; lower prefetch_depth or batch_size, hold fewer batches at once, raise "
          "loader_options::pinned_budget, or set staging = staging_memory::pageable"};
    }
  }

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
  std::optional<std::size_t> budget_;  // pinned bytes allowed; empty for pageable staging
  bool budget_named_;                  // loader_options::pinned_budget set (for the message)
  unsigned max_blocks_ = 1024;
  cuda::cuda_stream copy_;
  cuda::device_buffer constants_;
  // A fixed array of `capacity_` (never reallocated: workers index it while the consumer adds
  // a slot), the first `count_` in use.
  std::size_t capacity_;
  std::unique_ptr<std::unique_ptr<slot_part>[]> parts_;
  std::atomic<std::size_t> count_{0};
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
                                              std::size_t max_slots,
                                              loader_options const& options) {
  auto const device = checked_device(options);
  cuda::device_guard const guard{device};  // the stream, events and memory go on `device`
  return std::make_unique<cuda_stage>(device, host, slots, max_slots, options);
}

}  // namespace gpufeed::detail
