#pragma once
// The part of the loader that moves ready batches to a device: the CUDA path's pinned memory,
// copy stream, transforms and events. The host path has none (loader_core holds a null stage).
//
// Per slot, the stage keeps the order that makes reuse safe:
//   copy_async:  copy stream waits for the slot's last release, copies, transforms, records done
//   hand_off:    the consumer's stream waits for done
//   use_on:      another stream the consumer declares waits for done too
//   release:     records released on each of those streams (copy_async waits for them all)
//   wait_host_free: a worker holding a claim on the slot's next batch waits for done before it
//                   writes the host half again (device_path::wait_for_copy says why the claim)

#include <cstddef>
#include <memory>

#include "core/device/device_layout.hpp"
#include "gpufeed/detail/adapted_dataset.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/options.hpp"
#include "gpufeed/stats.hpp"
#include "gpufeed/stream_view.hpp"

namespace gpufeed::detail {

class device_stage {
 public:
  virtual ~device_stage() = default;

  /// Host memory of slot `id`, owned by the stage (pinned, or pageable by option).
  [[nodiscard]] virtual std::byte* host_memory(std::size_t id) const noexcept = 0;
  /// Device memory of slot `id`: the host mirror, then the transforms' outputs.
  [[nodiscard]] virtual std::byte* device_memory(std::size_t id) const noexcept = 0;
  [[nodiscard]] virtual device_layout const& layout() const noexcept = 0;
  [[nodiscard]] virtual int device() const noexcept = 0;

  /// Makes the stage's device current on a worker thread; once per thread.
  virtual void bind_worker_thread() = 0;
  /// Blocks until no copy reads slot `id`'s host memory any more (at once in the steady state).
  /// Called only by a worker holding a claim on the slot's batch, so that the copy waited for is
  /// the previous batch's: none of this batch can be queued while a claim is held.
  virtual void wait_host_free(std::size_t id) = 0;
  /// Enqueues the copy of slot `id` (`samples` samples) and its transforms. Asynchronous.
  virtual void copy_async(std::size_t id, std::size_t samples) = 0;
  /// Makes `consumer` wait for slot `id`'s copy. Asynchronous.
  virtual void hand_off(std::size_t id, stream_view consumer) = 0;
  /// Makes `stream` wait for slot `id`'s copy as well, and orders the slot's release after it.
  /// Called by the batch's holder between hand_off and release. Asynchronous.
  virtual void use_on(std::size_t id, stream_view stream) = 0;
  /// Records, on every stream slot `id` was handed to or used on, that the consumer is done.
  virtual void release(std::size_t id) noexcept = 0;
  /// Adds a slot (held batches: the ring grows) and returns its id, the slot count before.
  /// Called by the consumer only; other slots may be in use meanwhile.
  /// @throws out_of_memory, cuda_error; the stage is unchanged then.
  virtual std::size_t add_slot() = 0;
  /// Adds the stage's counters to `out`.
  virtual void add_to(stats& out) const = 0;
};

/// The CUDA stage for `slots` slots of `host`'s layout, which may grow to `max_slots`; their
/// host memory comes from `host_memory` when it is not null (page-locked there).
/// @throws logic_error when gpufeed was built without CUDA or the device does not exist;
/// out_of_memory (with the budget arithmetic) when the ring does not fit.
[[nodiscard]] std::unique_ptr<device_stage> make_cuda_stage(
    slot_layout const& host, std::size_t slots, std::size_t max_slots,
    loader_options const& options, std::shared_ptr<host_memory_source> host_memory);

}  // namespace gpufeed::detail
