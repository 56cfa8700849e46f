#pragma once
/// @file
/// @brief A batch: a move-only lease on one slot of the loader's ring.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "gpufeed/batch_plan.hpp"
#include "gpufeed/stream_view.hpp"
#include "gpufeed/tensor_view.hpp"

namespace gpufeed {

namespace detail {
class loader_core;
struct slot;
}  // namespace detail

/// @brief One batch, owned by the caller until it is destroyed or `release()`d.
///
/// While a batch is alive its slot is never refilled. Destroying it gives the slot back to the
/// loader; on the CUDA path that records an event on the stream the batch was handed to, and the
/// slot's next copy waits for it, so work already queued on that stream may still read the
/// batch's device memory safely. A batch may outlive its loader: the slot's memory stays valid
/// until the batch goes. Not thread-safe: use one batch from one thread at a time.
class batch {
 public:
  batch() = default;
  batch(batch&& other) noexcept;
  batch& operator=(batch&& other) noexcept;
  batch(batch const&) = delete;
  batch& operator=(batch const&) = delete;
  ~batch();

  /// @brief Gives the slot back now. The batch is empty afterwards. Never throws.
  void release() noexcept;
  /// @brief Declares that work on `stream` reads this batch (CUDA path), beyond the stream it
  /// was handed to by next(): `stream` waits for the batch's copy (asynchronously: the host
  /// does not block), and the slot is reused only after the work queued on `stream` before the
  /// release, as for the stream given to next(). Call it before queueing that work. On the host
  /// path it does nothing.
  /// @throws logic_error on an empty batch; cuda_error if CUDA refuses the wait.
  void use_on(stream_view stream);
  /// @brief Whether this object holds a lease.
  [[nodiscard]] explicit operator bool() const noexcept { return slot_ != nullptr; }

  /// @brief Samples in this batch: batch_size, fewer for a short tail or skipped samples (0 when
  /// every sample of the batch was skipped; the batch is still delivered so that its step's
  /// last micro-batch is never lost).
  [[nodiscard]] std::size_t size() const noexcept;
  /// @brief Position of this batch in its epoch's plan (0-based).
  [[nodiscard]] std::uint64_t sequence() const noexcept;
  [[nodiscard]] std::uint64_t epoch() const noexcept;
  /// @brief Gradient-accumulation position of this batch.
  [[nodiscard]] step_info step() const noexcept;
  /// @brief Number of fields.
  [[nodiscard]] std::size_t fields() const noexcept;
  /// @brief Field `f` as a tensor of shape [size(), field dims...]: in device memory on the
  /// CUDA path (after its transform, if one was asked for: dtype and layout are the
  /// transform's), in host memory otherwise.
  ///
  /// On the CUDA path the data is ready for work queued on the stream given to `next()` after
  /// it returned; any other stream must first wait on that one.
  [[nodiscard]] tensor_view field(std::size_t f) const;
  /// @brief The field called `name`. @throws logic_error if there is none.
  [[nodiscard]] tensor_view field(std::string_view name) const;
  /// @brief Field `f` as the dataset wrote it, in host memory (pinned on the CUDA path), before
  /// any GPU transform. Stays intact while the batch is alive.
  [[nodiscard]] tensor_view host_field(std::size_t f) const;
  /// @brief Dataset indices of the samples, in batch order.
  [[nodiscard]] std::span<std::size_t const> indices() const noexcept;
  /// @brief Dataset indices left out of this batch by `error_policy::skip`.
  [[nodiscard]] std::span<std::size_t const> skipped() const noexcept;

 private:
  friend class detail::loader_core;
  batch(std::shared_ptr<detail::loader_core> core, detail::slot* s) noexcept
      : core_{std::move(core)}, slot_{s} {}
  std::shared_ptr<detail::loader_core> core_;
  detail::slot* slot_ = nullptr;
};

}  // namespace gpufeed
