#pragma once
// The ring's host memory when Python datasets run on worker processes: one anonymous shared file
// (shared_memory.hpp) that the loader hands out as slots and collate_fn blocks, and that every
// worker maps at the same offsets.

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "gpufeed/detail/adapted_dataset.hpp"
#include "gpufeed/options.hpp"
#include "python/workers/shared_memory.hpp"

namespace gpufeed::python::workers {

/// The ring's host memory, in an anonymous file the worker processes map too.
class shared_arena final : public detail::host_memory_source {
 public:
  /// Reserves `reserve` bytes of address space (the most the ring may ever take).
  explicit shared_arena(std::size_t reserve);
  std::byte* slot_memory(std::size_t id, std::size_t bytes) override;
  /// `bytes` more of the arena, for a batch a collate_fn made; its offset.
  /// @throws out_of_memory when the arena cannot grow.
  [[nodiscard]] std::uint64_t block(std::size_t bytes);
  /// Closes the arena's descriptor once no worker needs it (its memory stays mapped for the
  /// batches alive; it cannot grow any more).
  void close_file() noexcept;
  [[nodiscard]] std::byte* at(std::uint64_t offset) const noexcept {
    return mapping_.base() + offset;
  }
  [[nodiscard]] int fd() const noexcept { return mapping_.fd(); }
  [[nodiscard]] std::size_t reserved() const noexcept { return mapping_.reserved(); }
  /// The offset of `p` in the arena. @throws std::out_of_range when it is not inside.
  [[nodiscard]] std::uint64_t offset_of(std::byte const* p) const;

 private:
  std::mutex mutex_;
  shared_mapping mapping_;
  std::size_t used_ = 0;
};

}  // namespace gpufeed::python::workers
