// Uses an installed gpufeed the way a user's program would: one epoch of a built-in dataset.
// Exits 0 when every sample arrived exactly once.
#include <gpufeed/gpufeed.hpp>

#include <cstddef>
#include <exception>
#include <iostream>
#include <memory>
#include <vector>

int main() {
  try {
    gpufeed::sample_spec spec;
    spec.add("x", gpufeed::dtype::f32, {4}).add("y", gpufeed::dtype::i64, {});
    auto data = std::make_shared<gpufeed::synthetic>(1000, spec);
    gpufeed::loader_options options;
    options.batch_size = 64;
    options.workers = 2;
    options.prefetch_depth = 3;
    options.shuffle = true;
    options.seed = 7;
    gpufeed::loader loader{data, options};

    std::vector<int> seen(data->size(), 0);
    std::size_t batches = 0;
    for (auto& batch : loader) {
      ++batches;
      for (std::size_t index : batch.indices()) ++seen[index];
    }
    for (std::size_t i = 0; i < seen.size(); ++i) {
      if (seen[i] != 1) {
        std::cerr << "sample " << i << " seen " << seen[i] << " times\n";
        return 1;
      }
    }
    std::cout << "gpufeed " << gpufeed::version << " from the installed package: " << batches
              << " batches, " << seen.size() << " samples, each once\n";
    return batches == loader.batches_per_epoch() ? 0 : 1;
  } catch (std::exception const& error) {
    std::cerr << "gpufeed_install_check: " << error.what() << "\n";
    return 1;
  }
}
