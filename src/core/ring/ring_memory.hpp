#pragma once
// How much memory the ring may take, decided before anything is allocated: the host memory of one
// slot (its batch and the per-sample lists beside it), the limits the machine's memory sets on
// batch_size and prefetch_depth, the budget that sizes an automatic ring, and the held-batches
// budget that bounds a growing one. Also the one place slots are made.

#include <cstddef>
#include <exception>
#include <memory>

#include "core/device/device_path.hpp"
#include "core/host_resources.hpp"
#include "core/ring/slot.hpp"
#include "core/tuning/autotuner.hpp"
#include "gpufeed/detail/adapted_dataset.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/options.hpp"

namespace gpufeed::detail {

/// Bytes a slot keeps per sample beside the batch itself: its dataset index, a failure record and
/// a skip entry (slot::indices, failures, skipped), each sized batch_size once.
inline constexpr std::size_t bookkeeping_bytes_per_sample =
    2 * sizeof(std::size_t) + sizeof(read_failure);

/// The most slots a ring may have, grown or not (as loader_options::prefetch_depth's maximum).
inline constexpr std::size_t ring_slots_limit = 4096;

/// The per-sample lists of one slot of `batch_size` samples.
/// @throws logic_error naming batch_size when the size does not fit in std::size_t.
[[nodiscard]] std::size_t slot_bookkeeping_bytes(std::size_t batch_size);

/// The host memory one slot takes: its batch (padding included) and its bookkeeping.
/// @throws logic_error naming batch_size when the size does not fit in std::size_t.
[[nodiscard]] std::size_t slot_footprint(slot_layout const& layout);

/// The ring's sizes, checked against the machine's memory.
struct ring_plan {
  autotune_plan tuning;       // threads and slots at construction, the active part at first
  std::size_t footprint = 0;  // host bytes per slot (slot_footprint)
  std::size_t max_slots = 0;  // what held batches may grow the ring to
};

/// The ring for `layout` under `options`: its slots (the automatic depth sized by the budget
/// counting each slot's whole footprint) and its held-batches limit. Nothing is allocated.
/// @throws out_of_memory naming loader_options::batch_size when one slot is more than
/// `physical_memory` (the machine's; 0: unknown, then the allocation itself reports), or
/// prefetch_depth when the ring is; logic_error when a size does not fit in std::size_t.
[[nodiscard]] ring_plan plan_ring(slot_layout const& layout, loader_options const& options,
                                  std::size_t physical_memory = physical_memory_bytes());

/// The bytes the ring may take when batches are held: loader_options::held_batches_budget, else
/// a quarter of physical memory (1 GiB when unknown), and never more than may be pinned.
[[nodiscard]] std::size_t held_batches_budget(loader_options const& options) noexcept;

/// The slots a ring of `initial` slots of `footprint` bytes may grow to under `budget` bytes
/// (at most ring_slots_limit; at least `initial`).
[[nodiscard]] std::size_t held_batches_slots(std::size_t initial, std::size_t footprint,
                                             std::size_t budget) noexcept;

/// The host memory of slot `id` when it is not the slot's own: the CUDA stage's (which took it
/// from `source` when there is one), else `source`'s; null when the slot allocates its own.
/// @throws out_of_memory as the source does.
[[nodiscard]] std::byte* slot_host_memory(std::size_t id, slot_layout const& layout,
                                          device_path const& device, host_memory_source* source);

/// Slot `id` of `layout`: its host memory is `external` (the CUDA stage's or a source's) or,
/// when null, its own.
/// @throws out_of_memory naming what did not fit.
[[nodiscard]] std::unique_ptr<slot> make_slot(std::size_t id, std::byte* external,
                                              slot_layout const& layout);

}  // namespace gpufeed::detail
