#pragma once
// Held batches (design.md, item 8): when the consumer keeps every slot leased to a live batch,
// next() adds a slot rather than fail or wait forever, as PyTorch's loaders would simply use more
// memory: one warning the first time, saying what is held and what it costs, and slots up to the
// ring's limit (loader_options::held_batches_budget, ring_memory.hpp); past it, a clear error.

#include <cstddef>
#include <mutex>

#include "core/device/device_path.hpp"
#include "core/ring/ring.hpp"
#include "gpufeed/detail/adapted_dataset.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed::detail {

class held_batches {
 public:
  /// Slots of `layout` take `footprint` host bytes each (ring_memory.hpp); their memory comes
  /// from `source` when it is not null (loader_options::host_memory).
  held_batches(slot_layout const& layout, std::size_t footprint,
               host_memory_source* source = nullptr) noexcept
      : layout_{layout}, footprint_{footprint}, source_{source} {}

  /// Adds one slot to `slots`, every slot of which is leased, allocating it with `lock` released
  /// (held again on return; only the consumer grows the ring, so nothing else changes its size
  /// meanwhile). Warns the first time. Returns false when the ring may not grow.
  /// @throws out_of_memory, cuda_error when the slot cannot be made; the ring is unchanged then.
  [[nodiscard]] bool grow(std::unique_lock<std::mutex>& lock, ring& slots, device_path& device);
  /// The error next() raises when every slot is leased and the ring may not grow. Under the
  /// mutex.
  [[nodiscard]] logic_error refusal(ring const& slots) const;

 private:
  slot_layout const& layout_;
  std::size_t footprint_;
  host_memory_source* source_;
};

}  // namespace gpufeed::detail
