#include "loader_pass.hpp"

#include <stdexcept>
#include <unordered_map>

namespace gpufeed::bench {

consumed consume(gpufeed::loader& source, std::size_t batches, bool record_slots) {
  consumed result;
  std::unordered_map<std::uintptr_t, std::uint32_t> slot_index;
  if (record_slots) result.slot_sequence.reserve(batches);
  bool previous_was_end = false;
  while (result.batches < batches) {
    auto next = source.next();
    if (!next) {
      if (previous_was_end) throw std::runtime_error{"the loader delivered an empty epoch"};
      previous_was_end = true;
      ++result.epoch_ends;
      continue;
    }
    previous_was_end = false;
    if (record_slots) {
      auto const address = reinterpret_cast<std::uintptr_t>(next->field(0).data());
      auto const [at, added] =
          slot_index.try_emplace(address, static_cast<std::uint32_t>(result.slots.size()));
      if (added) result.slots.push_back(address);
      result.slot_sequence.push_back(at->second);
    }
    result.samples += next->size();
    ++result.batches;
    next->release();
  }
  return result;
}

}  // namespace gpufeed::bench
