#pragma once
// One epoch's order as the caller gave it (loader_options::order = sample_order::given): the
// indices and the plan cut from them. Shared by the loader and the slots filled from it, so that
// a newer order never changes a batch under the workers filling it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gpufeed/batch_plan.hpp"
#include "gpufeed/epoch_order.hpp"
#include "gpufeed/options.hpp"

namespace gpufeed::detail {

struct given_order {
  std::uint64_t epoch = 0;
  std::vector<std::size_t> indices;
  batch_plan plan;
};

/// Checks `order` against the dataset's size and the options, and cuts it into batches.
/// @throws logic_error naming the first index out of range, or the batch sizes that do not fit.
[[nodiscard]] std::shared_ptr<given_order const> make_given_order(std::uint64_t epoch,
                                                                  epoch_order order,
                                                                  std::size_t dataset_size,
                                                                  loader_options const& options);

}  // namespace gpufeed::detail
