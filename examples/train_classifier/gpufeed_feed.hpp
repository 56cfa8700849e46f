#pragma once
// The gpufeed side: gpufeed's own image_folder dataset (JPEG decode of only what the crop needs,
// at reduced size where the output allows, crop, resize, flip and colour jitter in the loader's
// worker threads, straight into the batch's memory) through gpufeed::torch's make_data_loader.

#include <memory>

#include "feed.hpp"

namespace train_classifier {

/// A feed over `options.folder` with gpufeed. On the CPU the uint8 batches are converted to
/// normalised float on the training side (timed as the feed's conversion stage); on a GPU the
/// loader delivers them on the device and its GPU transform converts them.
[[nodiscard]] std::unique_ptr<feed> make_gpufeed_feed(feed_options const& options);

}  // namespace train_classifier
