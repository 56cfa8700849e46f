#include "image/pipeline/decode_strategy.hpp"

namespace gpufeed::detail {

namespace {

// Per thread: a test comparing two strategies constructs its datasets on its own thread, and
// loader workers elsewhere never see it.
thread_local std::optional<decode_strategy> strategy_override;

}  // namespace

decode_strategy decode_strategy_for(image_options const& options) noexcept {
  if (strategy_override) return *strategy_override;
  if (options.full_decoding) return {.reduced = false, .cropped = false, .planar = false};
  return {};
}

scoped_decode_strategy::scoped_decode_strategy(decode_strategy strategy) noexcept
    : previous_{strategy_override} {
  strategy_override = strategy;
}

scoped_decode_strategy::~scoped_decode_strategy() {
  strategy_override = previous_;
}

int jpeg_reduction(image_options const& options, decode_strategy const& strategy, double crop_width,
                   double crop_height) noexcept {
  if (!strategy.reduced) return 1;
  for (int f : {8, 4, 2}) {
    if (crop_width / f >= options.width && crop_height / f >= options.height) return f;
  }
  return 1;
}

}  // namespace gpufeed::detail
