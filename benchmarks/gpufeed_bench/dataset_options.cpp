#include "dataset_options.hpp"

#include <CLI/CLI.hpp>

#include "common_options.hpp"

namespace gpufeed::bench {

void add_dataset_options(CLI::App& command, dataset_options& options,
                         std::string const& order_note) {
  add_value(command, "--dataset", options.dataset,
            "What is read: synthetic (generated per read, --cpu-cost-us of busy CPU each), memory "
            "(the same content held in RAM), hdf5:PATH (every dataset of the file), "
            "hdf5:PATH:name1,name2 (those datasets) or images:DIR (a class-per-folder JPEG/PNG "
            "tree); hdf5 and images need HDF5 / OpenCV builds",
            "KIND");
  add_choice(command, "--order", options.order,
             "Sample order: shuffle, chunk-aware (shuffle with chunk_window = --chunk-window; for "
             "chunked HDF5) or sequential" +
                 (order_note.empty() ? std::string{} : "; " + order_note),
             "ORDER", {"shuffle", "chunk-aware", "sequential"});
  add_value(command, "--chunk-window", options.chunk_window,
            "Chunks drawn from together by --order chunk-aware (loader_options::chunk_window), in "
            "chunks; the HDF5 chunk cache holds twice as many (ignored under other orders)",
            "N")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1024}));
  add_value(
      command, "--samples", options.samples,
      "synthetic, memory: samples per epoch (memory holds samples x (sample-bytes + 8) bytes)", "N")
      ->check(CLI::PositiveNumber);
  add_value(command, "--sample-bytes", options.sample_bytes,
            "synthetic, memory: bytes of the uint8 image field per sample ([3, s, s] when it is 3 "
            "s^2), besides an 8-byte int64 label",
            "BYTES")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  add_value(command, "--cpu-cost-us", options.cpu_cost_us,
            "synthetic: busy CPU time each read burns besides generating its bytes (every reader "
            "burns it), in microseconds per sample (a stand-in for decoding)",
            "US")
      ->check(CLI::Range(0.0, 1e6));
  add_value(command, "--wait-us", options.wait_us,
            "synthetic: time each read sleeps besides generating its bytes, in microseconds per "
            "sample (a stand-in for storage latency: more workers than cores help; not passed to "
            "the torch_python peer)",
            "US")
      ->check(CLI::Range(0.0, 1e6));
  add_value(command, "--image-size", options.image_size,
            "images: output height and width in pixels (random resized crop)", "PX")
      ->check(CLI::Range(1, 16384));
  add_value(command, "--seed", options.seed, "Shuffle seed and synthetic content seed", "N");
}

std::size_t effective_chunk_window(dataset_options const& options) {
  return options.order == "chunk-aware" ? options.chunk_window : 0;
}

void apply_order(dataset_options const& options, gpufeed::loader_options& loader) {
  loader.shuffle = options.order != "sequential";
  loader.chunk_window = effective_chunk_window(options);
  loader.seed = options.seed;
}

}  // namespace gpufeed::bench
