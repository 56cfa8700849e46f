// The CUDA path: pinned host slots, device slots, one non-blocking copy stream and, per slot,
// the events that order its reuse (see device_stage.hpp).

#include <cuda_runtime_api.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/device/device_stage.hpp"
#include "core/device/teardown_queue.hpp"
#include "core/host_resources.hpp"
#include "core/metrics/latency_histogram.hpp"
#include "core/nvtx.hpp"
#include "core/ring/slot.hpp"
#include "core/units.hpp"
#include "cuda/transform_kernel.hpp"
#include "gpufeed/cuda/buffer.hpp"
#include "gpufeed/cuda/device.hpp"
#include "gpufeed/cuda/error.hpp"
#include "gpufeed/cuda/event.hpp"
#include "gpufeed/cuda/stream.hpp"
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
             loader_options const& o, std::shared_ptr<host_memory_source> host_memory)
      : device_{device},
        host_{host},
        layout_{host, o.transforms},
        staging_{o.staging},
        budget_{pinned_budget(o)},
        budget_named_{o.pinned_budget.has_value()},
        host_memory_{std::move(host_memory)},
        capacity_{std::max(slots, max_slots)},
        parts_{std::make_unique<std::unique_ptr<slot_part>[]>(capacity_)} {
    check_budget(slots, host.slot_bytes());
    cudaDeviceProp properties{};
    GPUFEED_CUDA_TRY(cudaGetDeviceProperties(&properties, device_));
    max_blocks_ = static_cast<unsigned>(properties.multiProcessorCount) * 8;
    upload_transform_constants();
    for (std::size_t i = 0; i < slots; ++i) {
      parts_[i] = make_part(i);
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
    // The workers are joined, but whichever thread dropped the last reference to the loader is
    // running this (with batches outliving their loader: whichever thread freed the last
    // tensor, torch's autograd thread in a backward pass, say). What must wait for the GPU
    // (every queued copy, the consumer's last use of each slot, and the frees, which
    // synchronize the device) runs on the teardown thread; make_cuda_stage waits for it before
    // allocating again.
    auto const count = count_.load(std::memory_order_acquire);
    try {
      auto remains = std::make_shared<leftovers>(device_, std::move(copy_), std::move(constants_),
                                                 std::move(parts_), count, host_memory_);
      teardown_async([remains] { remains->release(); });
    } catch (...) {
      // No memory to hand it over: the teardown runs here (whatever was handed over already
      // ran in leftovers' destructor).
      leftovers{device_, std::move(copy_), std::move(constants_), std::move(parts_),
                count,   host_memory_}
          .release();
    }
  }

  cuda_stage(cuda_stage const&) = delete;
  cuda_stage& operator=(cuda_stage const&) = delete;

  std::size_t add_slot() override {
    auto const id = count_.load(std::memory_order_relaxed);  // only the consumer adds slots
    GPUFEED_EXPECTS(id < capacity_, "the CUDA stage has room for " + std::to_string(capacity_) +
                                        " slots; the ring cannot grow further");
    check_budget(id + 1, host_.slot_bytes(), true);
    cuda::device_guard const guard{device_};
    parts_[id] = make_part(id);
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

  // Called by a worker that holds a claim on slot `id`'s batch (device_path::wait_for_copy): the
  // batch cannot be complete, so no newer copy of the slot can be recorded meanwhile, and the
  // copy waited for (and timed) is always the previous batch's.
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
    if (p.copy_pending.exchange(false, std::memory_order_acq_rel)) {
      // The copy is complete: one of the claim holders reads its timing, without blocking.
      auto const h2d_ns = static_cast<std::int64_t>(cuda::elapsed_ms(p.start, p.copied) * 1e6f);
      auto const transform_ns =
          static_cast<std::int64_t>(cuda::elapsed_ms(p.copied, p.done) * 1e6f);
      h2d_ns_.fetch_add(h2d_ns, std::memory_order_relaxed);
      transform_ns_.fetch_add(transform_ns, std::memory_order_relaxed);
      h2d_time_.record(h2d_ns);  // per copy, for stats::h2d's percentiles
      transform_time_.record(transform_ns);
      timed_copies_.fetch_add(1, std::memory_order_relaxed);
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
    p.done.record(copy_.native());
    // No claim holder can be in wait_host_free now: every sample of this batch is read.
    p.copy_pending.store(true, std::memory_order_release);
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
    /// `external`: host memory from the dataset's host_memory_source (page-locked here with pinned
    /// staging), or null for the part's own.
    slot_part(std::size_t host_bytes, std::size_t device_bytes, staging_memory staging,
              std::byte* external)
        : device{device_bytes} {
      if (external != nullptr) {
        if (staging == staging_memory::pinned) {
          registered = cuda::registered_host_memory{external, host_bytes};
        }
        host = external;
      } else if (staging == staging_memory::pinned) {
        pinned = cuda::pinned_buffer{host_bytes};
        host = pinned.data();
      } else {
        pageable = allocate_resident(host_bytes, slot_layout::alignment, "a pageable ring slot");
        host = pageable.get();
      }
    }
    cuda::pinned_buffer pinned;
    cuda::registered_host_memory registered;
    aligned_bytes pageable;
    std::byte* host = nullptr;
    cuda::device_buffer device;
    cuda::cuda_event start{cuda::cuda_event::kind::timing};
    cuda::cuda_event copied{cuda::cuda_event::kind::timing};
    cuda::cuda_event done{cuda::cuda_event::kind::timing};  // after the transforms
    std::atomic<bool> copy_pending{false};                  // a copy recorded and not timed yet
    // The streams of the current lease (the one next() handed it to, then any use_on added),
    // and the events recorded on them at its release: the next copy waits for the first
    // `recorded`. Events are made on first need and kept, so a steady state allocates nothing.
    std::vector<cudaStream_t> users;
    std::vector<cuda::cuda_event> releases;
    std::size_t recorded = 0;
  };

  // What the destructor hands to the teardown thread: release() waits for the copy stream and
  // for each slot's last release, then frees the slots and the constants while the stage's
  // device is current. Its destructor releases too, so that no path frees without waiting.
  struct leftovers {
    leftovers(int d, cuda::cuda_stream&& stream, cuda::device_buffer&& values,
              std::unique_ptr<std::unique_ptr<slot_part>[]>&& slots, std::size_t n,
              std::shared_ptr<host_memory_source> source) noexcept
        : device{d},
          copy{std::move(stream)},
          constants{std::move(values)},
          memory{std::move(source)},
          parts{std::move(slots)},
          count{n} {}
    leftovers(leftovers const&) = delete;
    leftovers& operator=(leftovers const&) = delete;
    ~leftovers() { release(); }

    void release() noexcept {
      if (!parts) {
        return;  // released already, or nothing was handed over
      }
      try {
        cuda::device_guard const guard{device};
        GPUFEED_CUDA_LOG(cudaStreamSynchronize(copy.native()));
        for (std::size_t i = 0; i < count; ++i) {
          auto const& p = *parts[i];
          for (std::size_t r = 0; r < p.recorded; ++r) {
            GPUFEED_CUDA_LOG(cudaEventSynchronize(p.releases[r].native()));
          }
        }
        for (std::size_t i = 0; i < count; ++i) {
          parts[i].reset();
        }
        parts.reset();
        constants = cuda::device_buffer{};
      } catch (std::exception const& e) {
        try {
          logger()->error("gpufeed: CUDA teardown: {}", e.what());
        } catch (...) {
        }
      }
    }

    int device;
    cuda::cuda_stream copy;  // destroyed last: cudaStreamDestroy returns at once
    cuda::device_buffer constants;
    std::shared_ptr<host_memory_source> memory;  // what registered host memory belongs to
    std::unique_ptr<std::unique_ptr<slot_part>[]> parts;
    std::size_t count;
  };

  std::unique_ptr<slot_part> make_part(std::size_t id) {
    auto* const external =
        host_memory_ ? host_memory_->slot_memory(id, host_.slot_bytes()) : nullptr;
    return std::make_unique<slot_part>(host_.slot_bytes(), layout_.slot_bytes(), staging_,
                                       external);
  }

  // Refuses `slots` slots when they would pin more than the budget, before anything is
  // allocated.
  // `grown`: the ring grows for held batches (else its slots are prefetch_depth's).
  void check_budget(std::size_t slots, std::size_t slot_bytes, bool grown = false) const {
    if (!budget_) {
      return;  // pageable staging: nothing is pinned
    }
    auto const need = slots * slot_bytes;
    if (*budget_ > 0 && need > *budget_) {
      auto const why = grown ? std::string{" (grown for batches held alive)"}
                             : " (prefetch_depth " + std::to_string(slots) + ")";
      throw out_of_memory{
          "gpufeed: the ring needs " + std::to_string(slots) + " slots" + why + " x " +
          mib_text(slot_bytes) + " per batch = " + mib_text(need) +
          " of pinned memory, over the budget of " + mib_text(*budget_) +
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
  std::shared_ptr<host_memory_source> host_memory_;  // the dataset's (adapted_dataset), or null
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
                                              std::size_t max_slots, loader_options const& options,
                                              std::shared_ptr<host_memory_source> host_memory) {
  auto const device = checked_device(options);
  // Loaders destroyed before this one may still be freeing on the teardown thread: their memory
  // comes back first, so that loaders made one after another never hold two rings at once.
  wait_for_teardowns();
  cuda::device_guard const guard{device};  // the stream, events and memory go on `device`
  return std::make_unique<cuda_stage>(device, host, slots, max_slots, options,
                                      std::move(host_memory));
}

}  // namespace gpufeed::detail
