#pragma once
// The loader's way into the CUDA stage (device_stage.hpp), and the only one. Each function is one
// step of a batch's path, named after it, in the order a batch takes them:
//
//   workers:   bind_worker_thread   a worker thread starts
//              wait_for_copy        before a worker's first write into a slot, once it holds a
//                                   claim: the slot's previous copy must be done reading it
//              copy_async           after the batch's last sample: its copy and transforms
//   consumer:  hand_off             next(): the consumer's stream waits for the copy
//              use_on               batch::use_on: another stream waits for it too
//              release              the batch goes: the slot's next copy waits for its streams
//   held:      add_slot             the ring grows by a slot
//
// An error from the stage comes out of here with the slot, the batch's sequence and its epoch in
// its message (the type and the CUDA error code kept). On the host path there is no stage and
// every step does nothing.

#include <cstddef>
#include <memory>
#include <string>

#include "core/device/device_stage.hpp"
#include "core/ring/lease.hpp"
#include "core/ring/slot.hpp"
#include "gpufeed/stats.hpp"
#include "gpufeed/stream_view.hpp"

namespace gpufeed::detail {

class device_path {
 public:
  /// `stage` is null on the host path.
  explicit device_path(std::unique_ptr<device_stage> stage = nullptr) noexcept;

  /// Whether batches go to a device (the CUDA path).
  [[nodiscard]] bool active() const noexcept { return stage_ != nullptr; }
  /// The layout of the device slots, or null on the host path.
  [[nodiscard]] device_layout const* output_layout() const noexcept;
  [[nodiscard]] int device() const noexcept;

  /// Host memory of slot `id` when the stage owns it (pinned, or pageable by option); null on the
  /// host path, where each slot owns its memory.
  [[nodiscard]] std::byte* host_memory(std::size_t id) const noexcept;
  /// Device memory of slot `id`, or null on the host path.
  [[nodiscard]] std::byte* device_memory(std::size_t id) const noexcept;

  /// A worker thread starts: makes the stage's device current. @throws as the stage does, the
  /// message naming `worker`.
  void bind_worker_thread(unsigned worker);
  /// Before a worker writes into `s` for the first time, holding a claim on its batch: blocks
  /// until the slot's previous copy no longer reads its host memory (at once in the steady
  /// state). The claim is what makes the wait right: while one is held the batch cannot be
  /// complete, so the copy waited for is the previous batch's, never this one's.
  void wait_for_copy(slot const& s);
  /// After the last sample of `s`: enqueues its copy (s.delivered samples) and transforms.
  void copy_async(slot const& s);
  /// next(): makes `consumer` wait for the copy of the batch `held`.
  void hand_off(lease const& held, stream_view consumer);
  /// batch::use_on: makes `stream` wait for the copy too, and orders the release after it.
  void use_on(lease const& held, stream_view stream);
  /// The batch in slot `id` goes: records the release on every stream it was used on.
  void release(std::size_t id) noexcept;
  /// Held batches: the stage's half of new slot `id`. @throws out_of_memory, cuda_error.
  void add_slot(std::size_t id);
  /// Adds the stage's counters to `out` (nothing on the host path).
  void add_to(stats& out) const;

 private:
  /// Runs `step` on the stage (nothing on the host path); an exception from it comes out with
  /// "<who()>, <doing>: " before its message.
  template <class Step, class Who>
  void enter(Step const& step, Who const& who, char const* doing);
  /// Rethrows the exception being handled with `what` before its message, keeping its type
  /// (gpufeed's errors); another std::exception becomes a runtime_error with it nested.
  [[noreturn]] static void rethrow_naming(std::string const& what);

  std::unique_ptr<device_stage> stage_;
};

}  // namespace gpufeed::detail
