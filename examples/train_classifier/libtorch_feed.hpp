#pragma once
// The libtorch side: a torch::data dataset written the way libtorch's users write one (OpenCV
// decodes, crops, resizes and flips in get(), tensors do the colour jitter, the float conversion
// and the normalisation, Stack<> collates) through torch::data::make_data_loader, and
// `.to(device)` in the loop. Each stage is timed (clock reads only) for the comparison.

#include <memory>

#include "feed.hpp"

namespace train_classifier {

/// A feed over `options.folder` with libtorch's own data loader. Gradient-accumulation steps are
/// the same as gpufeed's (gpufeed::batch_plan computes them; libtorch has none).
[[nodiscard]] std::unique_ptr<feed> make_libtorch_feed(feed_options const& options);

}  // namespace train_classifier
