#include "core/epochs/given_order.hpp"

#include <cstdint>
#include <numeric>
#include <string>
#include <utility>

#include "gpufeed/error.hpp"

namespace gpufeed::detail {

namespace {
batch_plan cut(epoch_order const& order, loader_options const& o) {
  if (order.batch_sizes.empty()) {
    return batch_plan{order.indices.size(), o.batch_size, o.accumulation_steps, o.last_batch,
                      o.last_step};
  }
  auto const total = std::accumulate(order.batch_sizes.begin(), order.batch_sizes.end(),
                                     std::size_t{0}, [](std::size_t sum, std::size_t size) {
                                       // A sum that wraps can never equal the indices' count.
                                       return sum + size < sum ? SIZE_MAX : sum + size;
                                     });
  GPUFEED_EXPECTS(
      total == order.indices.size(),
      "epoch_order: the batch sizes add up to " +
          (total == SIZE_MAX ? std::string{"more than SIZE_MAX"} : std::to_string(total)) +
          " samples but there are " + std::to_string(order.indices.size()) +
          " indices; give one size per batch, in order");
  return batch_plan{order.batch_sizes, o.batch_size, o.accumulation_steps, o.last_step};
}
}  // namespace

std::shared_ptr<given_order const> make_given_order(std::uint64_t epoch, epoch_order order,
                                                    std::size_t dataset_size,
                                                    loader_options const& options) {
  for (std::size_t position = 0; position < order.indices.size(); ++position) {
    auto const index = order.indices[position];
    GPUFEED_EXPECTS(index < dataset_size,
                    "epoch_order: index " + std::to_string(index) + " at position " +
                        std::to_string(position) + " of epoch " + std::to_string(epoch) +
                        " is out of range; the dataset has " + std::to_string(dataset_size) +
                        " samples (0 to " + std::to_string(dataset_size) + " - 1)");
  }
  auto plan = cut(order, options);
  return std::make_shared<given_order const>(
      given_order{epoch, std::move(order.indices), std::move(plan)});
}

}  // namespace gpufeed::detail
