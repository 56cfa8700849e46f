#pragma once
// The whole interface between gpufeed::batch and the loader core: what a batch may see of its
// slot (a lease, written once when next() hands the slot out and unchanged until the batch gives
// it back) and whom it gives it back to (a lease_owner, the loader core). batch.cpp reads no slot
// and calls nothing else of the core.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "gpufeed/batch.hpp"
#include "gpufeed/batch_plan.hpp"
#include "gpufeed/stream_view.hpp"

namespace gpufeed::detail {

class slot_layout;
class device_layout;

/// One delivered batch, as its holder sees it.
struct lease {
  std::size_t slot = 0;  // the ring slot it lives in
  std::uint64_t epoch = 0;
  std::uint64_t sequence = 0;
  step_info step{};
  std::size_t size = 0;                    // samples delivered
  std::size_t const* indices = nullptr;    // `size` dataset indices, in batch order
  std::span<std::size_t const> skipped{};  // left out by error_policy::skip
  std::byte* host = nullptr;               // the slot's host memory (slot_layout)
  std::byte* device = nullptr;  // its device memory (device_layout); null on the host path
};

/// Who a batch gives its slot back to. Implemented by loader_core.
class lease_owner {
 public:
  virtual ~lease_owner() = default;
  /// Gives the slot of `held` back. Any thread; never throws.
  virtual void release(lease const& held) noexcept = 0;
  /// Orders the release of `held` after work on `stream` too (batch::use_on). CUDA path only.
  virtual void use_on(lease const& held, stream_view stream) = 0;
  /// Where each field lives in a slot's host memory.
  [[nodiscard]] virtual slot_layout const& host_layout() const noexcept = 0;
  /// Where each field lives in a slot's device memory, after any transform; null on the host
  /// path.
  [[nodiscard]] virtual device_layout const* output_layout() const noexcept = 0;
  /// The CUDA device of the device memory, or -1.
  [[nodiscard]] virtual int device() const noexcept = 0;

 protected:
  lease_owner() = default;
  lease_owner(lease_owner const&) = default;
  lease_owner& operator=(lease_owner const&) = default;
};

/// Makes batches (batch's constructor is private to it).
struct lease_access {
  [[nodiscard]] static batch make(std::shared_ptr<lease_owner> owner, lease const* held) noexcept {
    return batch{std::move(owner), held};
  }
};

}  // namespace gpufeed::detail
