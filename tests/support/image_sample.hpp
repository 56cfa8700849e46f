#pragma once
// One sample of an image dataset read as a worker reads it: for every image suite, with OpenCV
// or without.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpufeed/dataset.hpp"
#include "gpufeed/detail/slot_layout.hpp"

namespace gpufeed::test {

using pixels = std::vector<std::uint8_t>;

// One sample of an image dataset: its image and its label.
struct sample {
  pixels image;
  std::int64_t label = -1;
};

// Sample `index` of `d`, read with `seed` as a worker reads it (into a slot of 0xAB bytes).
inline sample read_sample(gpufeed::dataset const& d, std::size_t index, std::uint64_t seed = 0) {
  gpufeed::detail::slot_layout layout{d.spec(), 1};
  std::vector<std::byte> slot(layout.slot_bytes(), std::byte{0xAB});
  gpufeed::read_context ctx;
  ctx.index = index;
  ctx.seed = seed;
  gpufeed::sample_view view{layout, slot.data(), 0};
  d.read(index, view, ctx);
  auto image = view.as<std::uint8_t>(0);
  return {pixels(image.begin(), image.end()), view.as<std::int64_t>(1)[0]};
}

}  // namespace gpufeed::test
