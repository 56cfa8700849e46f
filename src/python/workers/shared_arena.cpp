#include "python/workers/shared_arena.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <system_error>

#include "gpufeed/error.hpp"

namespace gpufeed::python::workers {

shared_arena::shared_arena(std::size_t reserve)
    : mapping_{shared_mapping::create("gpufeed-ring", reserve)} {}

std::byte* shared_arena::slot_memory(std::size_t, std::size_t bytes) {
  std::lock_guard const lock{mutex_};
  auto const offset = used_;
  // Pages of its own, at least one even for a slot of zero bytes (every field empty): page
  // locking registers each slot apart, and two slots must never share memory.
  auto const rounded = std::max(round_to_pages(bytes), page_bytes());
  try {
    mapping_.grow(offset + rounded);
  } catch (std::system_error const& e) {
    throw out_of_memory{std::string{"gpufeed: the shared ring cannot grow by a slot of "} +
                        std::to_string(bytes) + " bytes (" + e.what() +
                        "); lower batch_size or prefetch_depth"};
  }
  used_ = offset + rounded;
  return mapping_.base() + offset;
}

std::uint64_t shared_arena::block(std::size_t bytes) {
  return static_cast<std::uint64_t>(slot_memory(0, bytes) - mapping_.base());
}

void shared_arena::close_file() noexcept {
  std::lock_guard const lock{mutex_};
  mapping_.close_file();
}

std::uint64_t shared_arena::offset_of(std::byte const* p) const {
  // The end itself is a place: a field of zero bytes (an empty tensor) has its slot there.
  if (p < mapping_.base() || p > mapping_.base() + mapping_.size()) {
    throw std::out_of_range{"gpufeed: a batch slot outside the shared ring"};
  }
  return static_cast<std::uint64_t>(p - mapping_.base());
}

}  // namespace gpufeed::python::workers
