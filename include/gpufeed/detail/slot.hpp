#pragma once
// One slot of the ring: the memory of one batch and what the loader knows about it.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "gpufeed/batch_plan.hpp"
#include "gpufeed/detail/given_order.hpp"

namespace gpufeed::detail {

/// A batch's place in the plan: (epoch, sequence within the epoch).
struct cursor {
  std::uint64_t epoch = 0;
  std::size_t sequence = 0;
  friend bool operator==(cursor const&, cursor const&) = default;
  friend auto operator<=>(cursor const&, cursor const&) = default;
};

/// Frees memory from `::operator new(size, align)`.
struct aligned_delete {
  std::size_t alignment;
  void operator()(std::byte* p) const noexcept;
};
using aligned_bytes = std::unique_ptr<std::byte[], aligned_delete>;

/// Allocates `bytes` aligned to `alignment` and touches every page, so the ring's memory is
/// resident from the start. @throws out_of_memory naming `what`.
aligned_bytes allocate_resident(std::size_t bytes, std::size_t alignment, char const* what);

// The life of a slot:
//
//   free ──assign──► filling ──last sample read──► ready ──next()──► leased ──release──► free
//
// A flush (set_epoch / restore) turns filling and ready slots of the old generation back into
// free ones and marks them cancelled; a slot is only reassigned once no worker is attached to it,
// so workers never see its assignment change under them. The CUDA path adds its copy between
// "last sample read" and ready, and its release event between leased and free.
struct slot {
  enum class state : std::uint8_t { free, filling, ready, leased };

  /// `memory` is the slot's host memory when someone else owns it (the CUDA stage's pinned
  /// memory); when null the slot allocates `bytes` of its own.
  slot(std::size_t position, std::byte* external, std::size_t bytes, std::size_t alignment,
       std::size_t batch_size);

  std::size_t const id;  // position in the ring

  // Guarded by the loader's mutex.
  state status = state::free;
  std::uint64_t generation = 0;
  cursor at;                                 // the batch it holds
  std::shared_ptr<given_order const> order;  // its epoch's given order; null for the builtin one
  std::size_t first_position = 0;            // shard position of its first sample
  std::size_t count = 0;                     // samples assigned; stable while a worker is attached
  std::size_t delivered = 0;                 // samples left after skipped ones are removed
  step_info step;
  unsigned attached = 0;  // workers filling it right now
  // Set by the completing worker, which holds the slot alone then (see finish_contents).
  std::exception_ptr error;  // the first failed sample's, under error_policy::raise

  // Position p is written only by the worker that claimed p, and read by whoever completes the
  // slot (the acq_rel decrement of `remaining` orders them). Sized batch_size once.
  std::vector<std::size_t> indices;
  std::vector<std::exception_ptr> errors;  // set for a failed read, null otherwise
  std::vector<std::size_t> skipped;        // capacity batch_size; filled at completion

  // Hot counters on their own cache lines: every worker touches them once per claim.
  alignas(64) std::atomic<std::size_t> next_claim{0};
  alignas(64) std::atomic<std::size_t> remaining{0};
  alignas(64) std::atomic<bool> cancelled{false};
  std::size_t grain = 1;  // samples per claim; stable while a worker is attached

  aligned_bytes owned_memory;  // empty when the memory belongs to the device stage
  std::byte* memory = nullptr;
};

}  // namespace gpufeed::detail
