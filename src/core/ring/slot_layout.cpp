#include "gpufeed/detail/slot_layout.hpp"

#include <string>

#include "core/checked_math.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed::detail {

slot_layout::slot_layout(sample_spec spec, std::size_t batch_size)
    : spec_{std::move(spec)}, batch_size_{batch_size} {
  GPUFEED_EXPECTS(!spec_.empty(), "the dataset's sample_spec has no fields");
  for (auto const& f : spec_.fields()) {
    auto const bytes = f.bytes();
    auto const what = [&] {
      return "a batch slot: loader_options::batch_size x field '" + f.name + "' (" +
             std::to_string(bytes) + " bytes per sample)";
    };
    auto const region = checked_mul(batch_size_, bytes, what);
    offsets_.push_back(slot_bytes_);
    field_bytes_.push_back(bytes);
    slot_bytes_ = checked_add(slot_bytes_, checked_round_up(region, alignment, what), [&] {
      return "a batch slot: the regions of the fields up to '" + f.name + "' at batch_size " +
             std::to_string(batch_size_);
    });
  }
}

}  // namespace gpufeed::detail
