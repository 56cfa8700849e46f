#pragma once
/// @file
/// @brief `gpufeed::torch::worker_exception`: a failed `get()` as libtorch reports it, with
/// gpufeed's context.
///
/// @code
/// try {
///   for (auto& batch : *loader) train(batch);
/// } catch (gpufeed::torch::worker_exception& e) {
///   // "gpufeed: reading sample 6 (epoch 0, worker 1) failed: <the dataset's message>"
///   std::cerr << e.context().what() << '\n';
///   std::rethrow_exception(e.original_exception);  // the dataset's own exception
/// }
/// // A `catch (torch::data::WorkerException& e)` written for libtorch catches it as well.
/// @endcode

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "gpufeed/error.hpp"

namespace gpufeed::torch {

/// @brief A sample of a batch failed in a worker. It is libtorch's
/// `torch::data::WorkerException`, as libtorch's loader throws it: `what()` is libtorch's
/// "Caught exception in DataLoader worker thread. Original message: ..." and
/// `original_exception` is what `get()` (or gpufeed's check of its example) threw, so code written
/// for libtorch catches and unwraps it unchanged. gpufeed's context, which that message has no
/// room for, is on the object: `index()`, `epoch()`, `worker()`, every failed sample of the batch,
/// and `context()`, the `gpufeed::sample_error` whose message names them.
///
/// The batch is consumed: the loader goes on with the next one.
class worker_exception : public ::torch::data::WorkerException {
 public:
  /// @brief Wraps `error`: its first failure's nested exception (the dataset's) becomes
  /// `original_exception`, or `error` itself when nothing is nested.
  explicit worker_exception(sample_error const& error);
  /// @brief The index of the (first) failed sample in the dataset.
  [[nodiscard]] std::size_t index() const noexcept { return context_.index(); }
  /// @brief The epoch being read.
  [[nodiscard]] std::uint64_t epoch() const noexcept { return context_.epoch(); }
  /// @brief The worker thread that read it.
  [[nodiscard]] unsigned worker() const noexcept { return context_.worker(); }
  /// @brief Every failed sample of the batch, in batch order.
  [[nodiscard]] std::span<sample_failure const> failures() const noexcept {
    return context_.failures();
  }
  /// @brief gpufeed's own report: its `what()` names the sample, the epoch, the worker and the
  /// dataset's message; the dataset's exception is nested in it (`std::rethrow_if_nested`).
  [[nodiscard]] sample_error const& context() const noexcept { return context_; }

 private:
  sample_error context_;
};

}  // namespace gpufeed::torch
