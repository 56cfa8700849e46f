#include "dataset_options.hpp"

#include <CLI/CLI.hpp>

namespace gpufeed::bench {

void add_dataset_options(CLI::App& command, dataset_options& options,
                         std::string const& order_note) {
  command
      .add_option("--dataset", options.dataset,
                  "What is read: synthetic (generated per read, --cpu-cost-us of busy CPU each), "
                  "memory (the same content held in RAM), hdf5:PATH (every dataset of the file), "
                  "hdf5:PATH:name1,name2 (those datasets) or images:DIR (a class-per-folder "
                  "JPEG/PNG tree); hdf5 and images need HDF5 / OpenCV builds")
      ->type_name("KIND")
      ->capture_default_str();
  command
      .add_option("--order", options.order,
                  "Sample order: shuffle, chunk-aware (shuffle with chunk_window = "
                  "--chunk-window; for chunked HDF5) or sequential" +
                      (order_note.empty() ? std::string{} : "; " + order_note))
      ->type_name("ORDER")
      ->check(CLI::IsMember({"shuffle", "chunk-aware", "sequential"}))
      ->capture_default_str();
  command
      .add_option("--chunk-window", options.chunk_window,
                  "Chunks drawn from together by --order chunk-aware (loader_options::"
                  "chunk_window), in chunks; the HDF5 chunk cache holds twice as many (ignored "
                  "under other orders)")
      ->type_name("N")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1024}))
      ->capture_default_str();
  command
      .add_option("--samples", options.samples,
                  "synthetic, memory: samples per epoch (memory holds samples x "
                  "(sample-bytes + 8) bytes)")
      ->type_name("N")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command
      .add_option("--sample-bytes", options.sample_bytes,
                  "synthetic, memory: bytes of the uint8 image field per sample ([3, s, s] when "
                  "it is 3 s^2), besides an 8-byte int64 label")
      ->type_name("BYTES")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30))
      ->capture_default_str();
  command
      .add_option("--cpu-cost-us", options.cpu_cost_us,
                  "synthetic: busy CPU time each read burns besides generating its bytes (every "
                  "reader burns it), in microseconds per sample (a stand-in for decoding)")
      ->type_name("US")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  command
      .add_option("--wait-us", options.wait_us,
                  "synthetic: time each read sleeps besides generating its bytes, in "
                  "microseconds per sample (a stand-in for storage latency: more workers than "
                  "cores help; not passed to the torch_python peer)")
      ->type_name("US")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  command
      .add_option("--image-size", options.image_size,
                  "images: output height and width in pixels (random resized crop)")
      ->type_name("PX")
      ->check(CLI::Range(1, 16384))
      ->capture_default_str();
  command.add_option("--seed", options.seed, "Shuffle seed and synthetic content seed")
      ->type_name("N")
      ->capture_default_str();
}

std::size_t effective_chunk_window(dataset_options const& options) {
  return options.order == "chunk-aware" ? options.chunk_window : 0;
}

void apply_order(dataset_options const& options, gpufeed::loader_options& loader) {
  loader.shuffle = options.order != "sequential";
  loader.chunk_window = effective_chunk_window(options);
  loader.seed = options.seed;
}

void add_dataset_config(json& config, dataset_options const& options) {
  config["dataset"] = options.dataset;
  config["order"] = options.order;
  // What the window and the HDF5 chunk cache were, so that scaling results can be tied to them.
  config["chunk_window"] = effective_chunk_window(options);
  config["samples"] = options.samples;
  config["sample_bytes"] = options.sample_bytes;
  config["cpu_cost_us"] = options.cpu_cost_us;
  config["wait_us"] = options.wait_us;
  config["image_size"] = options.image_size;
  config["seed"] = options.seed;
}

}  // namespace gpufeed::bench
