#pragma once
/// @file
/// @brief An epoch's sample order chosen by the caller (a sampler or batch sampler of its own).
///
/// @code
/// gpufeed::loader loader{data, {.batch_size = 32, .order = gpufeed::sample_order::given}};
/// loader.set_epoch(0, gpufeed::epoch_order{.indices = my_sampler.draw(0)});
/// for (auto& batch : loader) { ... }
/// @endcode

#include <cstddef>
#include <vector>

namespace gpufeed {

/// @brief The dataset indices of one epoch of this rank, in the order they are delivered, and
/// optionally how they are cut into batches.
struct epoch_order {
  /// Dataset indices, each below the dataset's size; an index may appear more than once (as a
  /// sampler with replacement, or a distributed sampler's padding, gives them).
  std::vector<std::size_t> indices{};
  /// Empty: batches of `loader_options::batch_size` (the last one per `last_batch`). Otherwise
  /// the size of each batch in order (a batch sampler's), each from 1 to `batch_size`, summing
  /// to `indices.size()`; `last_batch` does not apply, `last_step` does.
  std::vector<std::size_t> batch_sizes{};
};

}  // namespace gpufeed
