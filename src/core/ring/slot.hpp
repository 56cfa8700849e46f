#pragma once
// One slot of the ring: the memory of one batch and what the loader knows about it. Its fields
// are grouped by who writes them: the ring (ring.cpp, under the loader's mutex), the workers
// filling the batch (batch_fill.cpp), and next() when it leases the slot out (the lease a batch
// reads). The life of a slot, and the rules of each transition, are in ring.hpp.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "core/cache_line.hpp"
#include "core/epochs/given_order.hpp"
#include "core/ring/cursor.hpp"
#include "core/ring/lease.hpp"
#include "gpufeed/batch_plan.hpp"

namespace gpufeed::detail {

/// Frees memory from `::operator new(size, align)`.
struct aligned_delete {
  std::size_t alignment;
  void operator()(std::byte* p) const noexcept;
};
using aligned_bytes = std::unique_ptr<std::byte[], aligned_delete>;

/// Allocates `bytes` aligned to `alignment` and touches every page, so the ring's memory is
/// resident from the start. @throws out_of_memory naming `what`.
aligned_bytes allocate_resident(std::size_t bytes, std::size_t alignment, char const* what);

/// The counters every worker filling a batch touches once per claim, each on its own cache line.
struct slot_claims {
  alignas(cache_line_bytes) std::atomic<std::size_t> next{0};  // the first position not claimed
  alignas(cache_line_bytes) std::atomic<std::size_t> remaining{0};  // positions not read yet
  alignas(cache_line_bytes) std::atomic<bool> cancelled{false};     // discarded by a flush
};
static_assert(alignof(slot_claims) == cache_line_bytes);
static_assert(offsetof(slot_claims, remaining) - offsetof(slot_claims, next) >= cache_line_bytes);
static_assert(offsetof(slot_claims, cancelled) - offsetof(slot_claims, remaining) >=
              cache_line_bytes);
static_assert(sizeof(slot_claims) == 3 * cache_line_bytes, "the last counter has its line alone");

/// A read that threw: the dataset's exception as it was thrown, and the worker that read. The
/// sample_error naming the sample is built from it once, when the batch completes.
struct read_failure {
  std::exception_ptr cause;  // null: the read succeeded
  unsigned worker = 0;
};

struct slot {
  enum class state : std::uint8_t { free, filling, ready, leased };

  /// `external` is the slot's host memory when someone else owns it (the CUDA stage's pinned
  /// memory); when null the slot allocates `bytes` of its own. The per-sample lists are sized
  /// `batch_size` here, once. @throws out_of_memory naming what did not fit.
  slot(std::size_t position, std::byte* external, std::size_t bytes, std::size_t alignment,
       std::size_t batch_size);

  std::size_t const id;  // position in the ring

  // The ring's (ring.cpp), guarded by the loader's mutex.
  state status = state::free;
  std::uint64_t generation = 0;
  cursor at;                                 // the batch it holds
  std::shared_ptr<given_order const> order;  // its epoch's given order; null for the builtin one
  std::size_t first_position = 0;            // shard position of its first sample
  std::size_t count = 0;                     // samples assigned; stable while a worker is attached
  step_info step;
  unsigned attached = 0;  // workers filling it right now
  std::size_t grain = 1;  // samples per claim; stable while a worker is attached

  // The workers' (batch_fill.cpp). Position p of `indices` and `failures` is written only by the
  // worker that claimed p, and read by whoever completes the slot (the acq_rel decrement of
  // claims.remaining orders them); the rest is written by the completing worker, which holds the
  // slot alone then. Sized batch_size once.
  std::vector<std::size_t> indices;
  std::vector<read_failure> failures;  // a failed read's cause, null otherwise
  std::vector<std::size_t> skipped;    // capacity batch_size; filled at completion
  std::size_t delivered = 0;           // samples left after skipped ones are removed
  std::exception_ptr error;            // every failed sample's, under error_policy::raise
  bool ended = false;      // an open-ended epoch's source had no batch for it: nothing to deliver
  std::size_t source = 0;  // the source that said so
  slot_claims claims;

  // next()'s: what the batch holding the slot sees, written when the slot is leased.
  lease handed;

  aligned_bytes owned_memory;  // empty when the memory belongs to the device stage
  std::byte* memory = nullptr;
};

}  // namespace gpufeed::detail
