#include "gpufeed/detail/slot_layout.hpp"

#include <limits>
#include <string>

#include "gpufeed/error.hpp"

namespace gpufeed::detail {

slot_layout::slot_layout(sample_spec spec, std::size_t batch_size)
    : spec_{std::move(spec)}, batch_size_{batch_size} {
  GPUFEED_EXPECTS(!spec_.empty(), "the dataset's sample_spec has no fields");
  constexpr auto max = std::numeric_limits<std::size_t>::max() / 2;
  for (auto const& f : spec_.fields()) {
    auto const bytes = f.bytes();
    GPUFEED_EXPECTS(bytes == 0 || batch_size_ <= max / bytes,
                    "batch_size " + std::to_string(batch_size_) + " x field '" + f.name +
                        "' overflows the address space");
    offsets_.push_back(slot_bytes_);
    field_bytes_.push_back(bytes);
    auto const region = bytes * batch_size_;
    slot_bytes_ += round_up(region);
  }
}

}  // namespace gpufeed::detail
