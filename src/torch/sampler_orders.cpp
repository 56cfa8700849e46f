#include "gpufeed/torch/sampler_orders.hpp"

#include "gpufeed/error.hpp"

namespace gpufeed::torch::detail {

bool append_batch(epoch_order& out, std::vector<std::size_t> const& indices, std::size_t batch_size,
                  bool drop_last, std::string const& sampler) {
  auto const batch = out.batch_sizes.size();
  GPUFEED_EXPECTS(!indices.empty(), "gpufeed::torch: the sampler (" + sampler +
                                        ") gave an empty batch (batch " + std::to_string(batch) +
                                        " of the epoch); return nullopt to end the epoch");
  GPUFEED_EXPECTS(indices.size() <= batch_size,
                  "gpufeed::torch: the sampler (" + sampler + ") gave " +
                      std::to_string(indices.size()) + " indices for batch " +
                      std::to_string(batch) + " of the epoch, more than batch_size " +
                      std::to_string(batch_size) + "; next(n) must give at most n");
  if (drop_last && indices.size() < batch_size) {
    return false;  // libtorch's loader ends the epoch at a short batch under drop_last
  }
  out.indices.insert(out.indices.end(), indices.begin(), indices.end());
  out.batch_sizes.push_back(indices.size());
  return true;
}

}  // namespace gpufeed::torch::detail
