#pragma once
// The flags `compare` and `sweep` share: what they read (--dataset and the settings of the
// synthetic, memory and image datasets), and in which order the loader reads it.

#include <cstddef>
#include <cstdint>
#include <string>

#include "bench_json.hpp"
#include "gpufeed/options.hpp"

namespace CLI {
class App;
}

namespace gpufeed::bench {

struct dataset_options {
  std::string dataset = "synthetic";  ///< synthetic | memory | hdf5:PATH[:a,b] | images:DIR
  std::string order = "shuffle";      ///< the loader's order: shuffle | chunk-aware | sequential
  std::size_t chunk_window = 4;       ///< chunks drawn from together by --order chunk-aware
  std::size_t samples = 50'000;       ///< synthetic, memory: samples per epoch
  std::size_t sample_bytes = 12'288;  ///< synthetic, memory: the image field (3 x 64 x 64 uint8)
  double cpu_cost_us = 0;             ///< synthetic: busy CPU time per read
  double wait_us = 0;                 ///< synthetic: time each read sleeps (storage latency)
  int image_size = 224;               ///< images: output height and width
  std::uint64_t seed = 0;             ///< shuffle seed and synthetic content seed
};

/// Registers --dataset, --order, --chunk-window, --samples, --sample-bytes, --cpu-cost-us,
/// --wait-us, --image-size and --seed on `command`; the values already in `options` are the
/// defaults shown by --help. `order_note`, when not empty, is appended to --order's description.
void add_dataset_options(CLI::App& command, dataset_options& options,
                         std::string const& order_note = {});

/// The chunk window the loader uses: --chunk-window under --order chunk-aware, else 0.
[[nodiscard]] std::size_t effective_chunk_window(dataset_options const& options);

/// Sets `loader`'s shuffle, chunk_window and seed from --order, --chunk-window and --seed.
void apply_order(dataset_options const& options, gpufeed::loader_options& loader);

}  // namespace gpufeed::bench
