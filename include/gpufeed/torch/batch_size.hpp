#pragma once
/// @file
/// @brief Batch-size suggestions and learning-rate scaling. Suggest-only: nothing here, and
/// nothing in gpufeed, ever changes the batch size a user asked for.
///
/// @code
/// auto found = gpufeed::torch::find_batch_size(model, {3, 224, 224}, torch::kCUDA);
/// std::cout << found.message << "\n";  // the largest that fit, and a suggestion with headroom
/// double lr = gpufeed::torch::scale_learning_rate(0.1, 256, found.suggested);
/// @endcode

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace gpufeed::torch {

/// @brief How `find_batch_size` searches.
struct batch_size_search {
  std::size_t start = 1;      ///< first batch size tried
  std::size_t max = 1 << 16;  ///< never tries more than this
  double headroom = 0.10;     ///< the suggestion leaves this share of the largest fit free
  std::size_t multiple = 8;   ///< the suggestion is rounded down to a multiple of this
};

/// @brief What `find_batch_size` found.
struct batch_size_result {
  std::size_t largest_fit = 0;  ///< the largest batch size whose trial succeeded (0: none)
  bool hit_max = false;         ///< no trial ran out of memory up to `max`
  std::size_t suggested = 0;    ///< largest_fit less the headroom, rounded to `multiple`
  struct trial {
    std::size_t batch_size;
    bool fit;
  };
  std::vector<trial> trials;  ///< every trial, in the order run
  std::string message;        ///< one sentence for the log, saying it is only a suggestion
};

/// @brief Whether `error` is an out-of-memory failure: libtorch's OutOfMemoryError (CUDA's
/// allocator), std::bad_alloc (the CPU's), or a c10::Error whose text says "out of memory".
[[nodiscard]] bool is_out_of_memory(std::exception_ptr const& error) noexcept;

/// @brief Runs `trial(batch_size)` for growing batch sizes (doubling from `search.start`) until
/// one runs out of memory, then bisects between the last fit and the first failure. Any other
/// exception from `trial` propagates. Caches are emptied after each failed trial on CUDA.
/// @return the largest batch size that fit and a suggestion with headroom; nothing is applied.
[[nodiscard]] batch_size_result find_batch_size(std::function<void(std::size_t)> const& trial,
                                                batch_size_search const& search = {});

/// @brief As above, with the trial a forward and a backward pass of `model` on random inputs of
/// shape [batch, sample_shape...] on `options`' device and dtype (float32 on CPU by default).
/// The model's gradients are zeroed afterwards; its weights are not changed (no optimizer step).
template <class Model>
batch_size_result find_batch_size(Model& model, std::vector<std::int64_t> const& sample_shape,
                                  ::torch::TensorOptions const& options = {},
                                  batch_size_search const& search = {}) {
  auto result = find_batch_size(
      [&](std::size_t batch) {
        std::vector<std::int64_t> shape{static_cast<std::int64_t>(batch)};
        shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
        auto const input = ::torch::randn(shape, options);
        model->forward(input).sum().backward();
        model->zero_grad();
      },
      search);
  model->zero_grad();
  return result;
}

/// @brief Learning-rate scaling rules for a changed effective batch size.
enum class lr_rule {
  linear,       ///< lr × new / base (Goyal et al., SGD with warm-up)
  square_root,  ///< lr × sqrt(new / base) (often used with Adam-type optimizers)
};

/// @brief The learning rate for `new_batch` samples per optimizer step, given `base_lr` tuned at
/// `base_batch`. Batches are effective batch sizes (see `effective_batch_size`).
/// @throws logic_error if a batch size is 0 or base_lr is not positive and finite.
[[nodiscard]] double scale_learning_rate(double base_lr, std::size_t base_batch,
                                         std::size_t new_batch, lr_rule rule = lr_rule::linear);

/// @brief Samples per optimizer step: batch_size × accumulation_steps × world_size.
[[nodiscard]] std::size_t effective_batch_size(std::size_t batch_size,
                                               std::size_t accumulation_steps = 1,
                                               std::size_t world_size = 1);

}  // namespace gpufeed::torch
