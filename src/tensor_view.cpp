#include "gpufeed/tensor_view.hpp"

namespace gpufeed {

tensor_view::tensor_view(std::string_view name, dtype type, void* data, std::size_t batch,
                         std::span<std::int64_t const> field_shape, int device) noexcept
    : name_{name}, type_{type}, data_{data}, rank_{field_shape.size() + 1}, device_{device} {
  shape_[0] = static_cast<std::int64_t>(batch);
  for (std::size_t i = 0; i < field_shape.size(); ++i) {
    shape_[i + 1] = field_shape[i];
  }
}

std::size_t tensor_view::elements() const noexcept {
  std::size_t n = 1;
  for (std::size_t i = 0; i < rank_; ++i) {
    n *= static_cast<std::size_t>(shape_[i]);
  }
  return n;
}

}  // namespace gpufeed
