#include "core/ring/held_batches.hpp"

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "core/ring/ring_memory.hpp"
#include "core/units.hpp"
#include "gpufeed/log.hpp"

namespace gpufeed::detail {

bool held_batches::grow(std::unique_lock<std::mutex>& lock, ring& slots, device_path& device) {
  if (!slots.may_grow()) {
    return false;
  }
  auto const id = slots.size();
  auto const held = slots.count(slot::state::leased);
  bool const first = slots.grown() == 0;
  auto const max_slots = slots.max_slots();
  lock.unlock();
  if (first) {
    logger()->warn(
        "all {} ring slots are leased to batches that are still alive: the training loop keeps "
        "batches past the next step (a list of losses keeps each step's graph and its input "
        "tensors; so does a saved batch or a tensor sliced from one). The ring grows by one "
        "slot of {} for each batch held beyond it, up to {} slots ({}; "
        "loader_options::held_batches_budget), then next() raises. Keep loss.item() or a "
        "copy instead to use less memory.",
        held, mib_text(footprint_), max_slots, mib_text(footprint_ * max_slots));
  }
  // Allocated with the lock released: a large slot takes a while to touch.
  std::unique_ptr<slot> added;
  try {
    device.add_slot(id);
    added = make_slot(id, slot_host_memory(id, layout_, device, source_), layout_);
  } catch (...) {
    lock.lock();
    throw;
  }
  lock.lock();
  slots.grow(std::move(added));
  return true;
}

logic_error held_batches::refusal(ring const& slots) const {
  auto const held = slots.count(slot::state::leased);
  if (slots.max_slots() <= slots.size() && slots.grown() > 0) {
    return logic_error{
        "gpufeed: all " + std::to_string(held) +
        " ring slots are leased to batches that are still alive, and the ring has grown to its "
        "limit of " +
        std::to_string(slots.max_slots()) + " slots (" + mib_text(footprint_ * slots.max_slots()) +
        ", loader_options::held_batches_budget). Something keeps every batch alive (for "
        "example total_loss += loss keeps each step's graph and inputs: add loss.item() "
        "instead); release batches, or raise held_batches_budget"};
  }
  return logic_error{
      "gpufeed: all " + std::to_string(slots.depth()) +
      " ring slots are leased to batches that are still alive, so the next batch cannot be "
      "prepared, and the ring may not grow (loader_options::held_batches_budget = 0, or one "
      "slot of " +
      mib_text(footprint_) +
      " does not fit in it); release (destroy) batches before asking for more, or raise "
      "loader_options::prefetch_depth above the number of batches you hold at once"};
}

}  // namespace gpufeed::detail
