#include "gpufeed/datasets/in_memory.hpp"

#include <cstring>
#include <string>

#include "gpufeed/error.hpp"

namespace gpufeed {

in_memory& in_memory::add_bytes(std::string name, dtype type, std::vector<std::int64_t> shape,
                                std::span<std::byte const> data,
                                std::shared_ptr<void const> owner) {
  spec_.add(name, type, std::move(shape));
  auto const row = spec_[spec_.size() - 1].bytes();
  if (data.size() != row * size_) {
    // Undo the add so that a caught error leaves the dataset as it was.
    spec_ = sample_spec{std::vector<field>(spec_.fields().begin(), spec_.fields().end() - 1)};
    GPUFEED_EXPECTS(false, "in_memory field '" + name + "' has " + std::to_string(data.size()) +
                               " bytes; " + std::to_string(size_) + " samples x " +
                               std::to_string(row) + " bytes = " + std::to_string(row * size_) +
                               " were expected");
  }
  columns_.push_back(data);
  owners_.push_back(std::move(owner));
  return *this;
}

void in_memory::read(std::size_t index, sample_view out, read_context const& /*ctx*/) const {
  GPUFEED_EXPECTS(index < size_, "in_memory::read: index " + std::to_string(index) +
                                     " is past the end (" + std::to_string(size_) + " samples)");
  for (std::size_t f = 0; f < columns_.size(); ++f) {
    auto const dst = out.bytes(f);
    std::memcpy(dst.data(), columns_[f].data() + index * dst.size(), dst.size());
  }
}

}  // namespace gpufeed
