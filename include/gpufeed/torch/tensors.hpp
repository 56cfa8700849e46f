#pragma once
/// @file
/// @brief A gpufeed batch as `torch::Tensor`s, without a copy.
///
/// @code
/// gpufeed::loader loader{data, options};
/// while (auto b = loader.next()) {
///   auto batch = gpufeed::torch::to_tensors(std::move(*b));
///   auto loss = criterion(model(batch.data), batch.target);
/// }  // the slot goes back to the loader when the last tensor that views it is gone
/// @endcode

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpufeed/batch.hpp"
#include "gpufeed/batch_plan.hpp"
#include "gpufeed/dtype.hpp"

namespace gpufeed::torch {

/// @brief libtorch's scalar type for a gpufeed dtype (`dtype::boolean` is `torch::kBool`).
/// @throws logic_error for uint16 on libtorch builds without torch::kUInt16 (before 2.3).
[[nodiscard]] ::torch::Dtype to_torch_dtype(dtype type);
/// @brief gpufeed's dtype for a libtorch scalar type (`torch::kBool` is `dtype::boolean`).
/// @throws logic_error for types gpufeed has no dtype for (complex, quantized), naming the type.
[[nodiscard]] dtype from_torch_dtype(::torch::Dtype type);

/// @brief One batch as tensors. The tensors view the loader's slot (host memory on the host path,
/// device memory on the CUDA path): the slot is leased for as long as any of them, or a view of
/// them, is alive, and goes back to the loader when the last one is destroyed. Keeping a tensor
/// longer keeps its slot out of the ring (the ring then grows, up to
/// `loader_options::held_batches_budget`); `clone()` it to keep the values without the slot.
///
/// It is a `torch::data::Example<>`: `data` and `target` are the first and the second field
/// (undefined tensors when there are fewer), so that a training loop written for libtorch's
/// stacked batches runs unchanged, `for (torch::data::Example<>& batch : *loader)` included.
///
/// On the CUDA path the tensors are ready for work on the stream that was current (on the
/// batch's device) when the loader delivered the batch; any other stream must be declared first
/// with `use_on` (see docs/torch.md, "CUDA streams").
struct tensor_batch : ::torch::data::Example<> {
  std::vector<std::string> names;       ///< field names, in the dataset's order
  std::vector<::torch::Tensor> fields;  ///< every field, in the same order
  step_info step{};                     ///< gradient-accumulation position of this micro-batch
  std::uint64_t epoch = 0;
  std::uint64_t sequence = 0;         ///< position of this batch in its epoch
  std::vector<std::int64_t> indices;  ///< dataset indices of the samples, in batch order
  std::vector<std::int64_t> skipped;  ///< indices skipped under error_policy::skip

  /// @brief Samples in the batch.
  [[nodiscard]] std::int64_t size() const noexcept {
    return static_cast<std::int64_t>(indices.size());
  }
  /// @brief The field called `name`. @throws logic_error naming the fields there are.
  [[nodiscard]] ::torch::Tensor const& operator[](std::string_view name) const;

  /// @brief Declares that work on `stream` (a `c10::cuda::CUDAStream` converts to it) reads
  /// this batch, beyond the stream it was delivered on: `stream` waits for the batch's copy
  /// (without blocking the host), and the slot is refilled only after the work queued on
  /// `stream` before the last tensor of the batch goes. Call it before queueing that work, e.g.
  /// right after entering a `c10::cuda::CUDAStreamGuard`. Host batches need nothing: it returns
  /// at once. `record_stream` is no substitute: it does not protect memory the tensors view.
  /// @throws logic_error when every tensor of the batch is already gone, for a stream that is
  /// not a CUDA stream of the batch's device, or in builds without CUDA for a CUDA batch.
  /// @throws cuda_error if CUDA refuses the wait.
  void use_on(::c10::Stream stream) const;
  /// @brief `use_on(torch's current stream on the batch's device)`.
  void use_on_current_stream() const;

 private:
  friend tensor_batch to_tensors(batch&& b);
  std::weak_ptr<batch> lease_;  // shared by the tensors' deleters; weak so as not to extend it
};

/// @brief Wraps `b`'s fields as tensors that share its lease (`from_blob` with a deleter that
/// releases the slot when the last tensor goes). On the CUDA path the tensors are on the batch's
/// device and are ready for work queued on the stream `b` was handed to after `next()` returned.
/// @throws logic_error if `b` is empty or a field's dtype has no libtorch type.
[[nodiscard]] tensor_batch to_tensors(batch&& b);

}  // namespace gpufeed::torch
