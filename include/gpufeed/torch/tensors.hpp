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
#include <string>
#include <string_view>
#include <vector>

#include "gpufeed/batch.hpp"
#include "gpufeed/batch_plan.hpp"
#include "gpufeed/dtype.hpp"

namespace gpufeed::torch {

/// @brief libtorch's scalar type for a gpufeed dtype.
/// @throws logic_error for uint16 on libtorch builds without torch::kUInt16 (before 2.3).
[[nodiscard]] ::torch::Dtype to_torch_dtype(dtype type);
/// @brief gpufeed's dtype for a libtorch scalar type (bool is stored as uint8).
/// @throws logic_error for types gpufeed has no dtype for (complex, quantized), naming the type.
[[nodiscard]] dtype from_torch_dtype(::torch::Dtype type);

/// @brief One batch as tensors. The tensors view the loader's slot (host memory on the host path,
/// device memory on the CUDA path): the slot is leased for as long as any of them, or a view of
/// them, is alive, and goes back to the loader when the last one is destroyed. Keeping a tensor
/// longer keeps its slot out of the ring; `clone()` it to keep the values without the slot.
///
/// `data` and `target` are the first and the second field (undefined tensors when there are
/// fewer), so that a training loop written for `torch::data::Example<>` batches runs unchanged.
struct tensor_batch {
  ::torch::Tensor data;
  ::torch::Tensor target;
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
};

/// @brief Wraps `b`'s fields as tensors that share its lease (`from_blob` with a deleter that
/// releases the slot when the last tensor goes). On the CUDA path the tensors are on the batch's
/// device and are ready for work queued on the stream `b` was handed to after `next()` returned.
/// @throws logic_error if `b` is empty or a field's dtype has no libtorch type.
[[nodiscard]] tensor_batch to_tensors(batch&& b);

}  // namespace gpufeed::torch
