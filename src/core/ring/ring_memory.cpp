#include "core/ring/ring_memory.hpp"

#include <algorithm>
#include <string>

#include "core/checked_math.hpp"
#include "core/units.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed::detail {

std::size_t slot_bookkeeping_bytes(std::size_t batch_size) {
  return checked_mul(batch_size, bookkeeping_bytes_per_sample, [] {
    return std::string{"a batch slot's per-sample lists: loader_options::batch_size x "} +
           std::to_string(bookkeeping_bytes_per_sample) + " bytes";
  });
}

std::size_t slot_footprint(slot_layout const& layout) {
  return checked_add(layout.slot_bytes(), slot_bookkeeping_bytes(layout.batch_size()), [] {
    return "a batch slot: its batch and its per-sample lists at loader_options::batch_size";
  });
}

namespace {
// Refuses a ring that cannot fit in the machine's memory, naming the option to change.
void expect_fits(slot_layout const& layout, std::size_t footprint, std::size_t slots,
                 loader_options const& o, std::size_t physical) {
  if (physical == 0) {
    return;  // unknown: the allocation reports what does not fit
  }
  if (footprint > physical) {
    throw out_of_memory{
        "gpufeed: loader_options::batch_size = " + std::to_string(o.batch_size) +
        " makes one batch slot take " + mib_text(footprint) + " (" + std::to_string(o.batch_size) +
        " samples x " + std::to_string(layout.spec().bytes_per_sample()) + " bytes, plus " +
        std::to_string(bookkeeping_bytes_per_sample) +
        " bytes per sample of bookkeeping and the fields' alignment), more than this machine's " +
        mib_text(physical) + " of physical memory; lower batch_size"};
  }
  auto const total = try_mul(footprint, slots);
  if (!total || *total > physical) {
    auto const depth = o.prefetch_depth == auto_depth
                           ? std::string{"the automatic depth's "} + std::to_string(slots) +
                                 " slots (loader_options::autotune.max_depth, memory_budget)"
                           : "loader_options::prefetch_depth = " + std::to_string(slots);
    throw out_of_memory{"gpufeed: the ring of " + depth + " x " + mib_text(footprint) +
                        " per slot is more than this machine's " + mib_text(physical) +
                        " of physical memory; lower prefetch_depth or batch_size"};
  }
}
}  // namespace

ring_plan plan_ring(slot_layout const& layout, loader_options const& options,
                    std::size_t physical_memory) {
  ring_plan plan;
  plan.footprint = slot_footprint(layout);
  plan.tuning = plan_autotune(options, plan.footprint);
  expect_fits(layout, plan.footprint, plan.tuning.slots, options, physical_memory);
  plan.max_slots =
      held_batches_slots(plan.tuning.slots, plan.footprint, held_batches_budget(options));
  return plan;
}

std::size_t held_batches_budget(loader_options const& o) noexcept {
  if (o.held_batches_budget) {
    return *o.held_batches_budget;
  }
  auto const physical = physical_memory_bytes();
  auto budget = physical > 0 ? physical / 4 : std::size_t{1} << 30;
  if (auto const pinned = pinned_budget(o)) {
    budget = std::min(budget, *pinned);
  }
  return budget;
}

std::size_t held_batches_slots(std::size_t initial, std::size_t footprint,
                               std::size_t budget) noexcept {
  if (budget == 0) {
    return initial;
  }
  auto const fit = budget / std::max<std::size_t>(footprint, 1);
  return std::max(initial, std::min(ring_slots_limit, fit));
}

std::byte* slot_host_memory(std::size_t id, slot_layout const& layout, device_path const& device,
                            host_memory_source* source) {
  if (device.active()) {
    return device.host_memory(id);
  }
  return source != nullptr ? source->slot_memory(id, layout.slot_bytes()) : nullptr;
}

std::unique_ptr<slot> make_slot(std::size_t id, std::byte* external, slot_layout const& layout) {
  return std::make_unique<slot>(id, external, layout.slot_bytes(), slot_layout::alignment,
                                layout.batch_size());
}

}  // namespace gpufeed::detail
