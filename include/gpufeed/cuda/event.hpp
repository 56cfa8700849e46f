#pragma once
/// @file
/// @brief `cuda_event`: an owning, move-only CUDA event.

#include <cuda_runtime_api.h>

namespace gpufeed::cuda {

/// @brief An event on the current device; created with `cudaEventDisableTiming` unless
/// `timing` is asked for, since timing events make every wait on them slower.
///
/// The exception is the CUDA stage's per-slot *done* event (src/cuda/cuda_stage.cpp): consumers
/// wait on it, yet it is a timing event, because it also ends the timing of each copy's work on
/// the copy stream (`elapsed_ms(copied, done)`: the transforms after the H2D copy), so one event
/// is recorded where an ordering event and a timing event would otherwise both be. It is kept
/// so because that ordering (timing events read under the slot's timing lock) is the one proven
/// on a GPU; a split into an ordering *done* and a separate timing mark waits until a GPU can
/// verify it.
class cuda_event {
 public:
  enum class kind : bool { ordering, timing };
  /// @throws cuda_error if the event cannot be created.
  explicit cuda_event(kind k = kind::ordering);
  ~cuda_event();
  cuda_event(cuda_event&& other) noexcept;
  cuda_event& operator=(cuda_event&& other) noexcept;
  cuda_event(cuda_event const&) = delete;
  cuda_event& operator=(cuda_event const&) = delete;

  [[nodiscard]] cudaEvent_t native() const noexcept { return event_; }
  /// @brief Asynchronous: captures the work queued on `stream` so far.
  void record(cudaStream_t stream) const;
  /// @brief Whether the captured work has completed (true if never recorded). Never blocks.
  [[nodiscard]] bool done() const;
  /// @brief Blocks the host until the captured work has completed.
  void synchronize() const;

 private:
  cudaEvent_t event_ = nullptr;
};

/// @brief Milliseconds between two completed timing events.
[[nodiscard]] float elapsed_ms(cuda_event const& from, cuda_event const& to);

}  // namespace gpufeed::cuda
