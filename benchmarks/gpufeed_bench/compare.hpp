#pragma once
// `gpufeed-bench compare`: gpufeed next to libtorch's C++ loader (torch::data::DataLoader) and
// PyTorch's Python loader (torch.utils.data.DataLoader) on the same dataset, batch size and
// workers, interleaved (gpufeed, torch_cpp, torch_python, repeat). Reports each peer's median
// samples/s and the ratios gpufeed / peer.

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "common_options.hpp"
#include "json_report.hpp"

namespace CLI {
class App;
}

namespace gpufeed::bench {

struct compare_config {
  common_options common;
  std::string dataset = "synthetic";  ///< synthetic | memory | hdf5:PATH[:a,b] | images:DIR
  std::string order = "shuffle";      ///< gpufeed's order: shuffle | chunk-aware | sequential
  std::size_t chunk_window = 4;       ///< chunks drawn from together by --order chunk-aware
  std::string on_error = "raise";     ///< raise | skip
  std::vector<std::string> peers = {"gpufeed", "torch_cpp", "torch_python"};
  std::size_t repeats = 3;
  std::size_t warmup = 10;            ///< untimed batches before each timed run (every peer)
  std::size_t torch_cpp_batches = 0;  ///< timed batches of torch_cpp; 0: --batches
  std::size_t python_batches = 300;   ///< timed batches of torch_python; 0: --batches
  std::size_t samples = 50'000;       ///< synthetic: samples per epoch
  std::size_t sample_bytes = 12'288;  ///< synthetic: the image field (3 x 64 x 64 uint8)
  double cpu_cost_us = 0;             ///< synthetic: busy CPU time per read
  int image_size = 224;               ///< images: output height = width
  std::uint64_t seed = 0;
  std::string python = "/usr/bin/python3";
};

[[nodiscard]] compare_config default_compare_config();

/// Registers the `compare` subcommand and its flags, which write into `config`.
CLI::App* add_compare_command(CLI::App& app, compare_config& config);

/// Runs the comparison, printing one line per run and the ratios to `progress`.
/// @throws std::exception on bad settings or a gpufeed error (a peer's failure is reported in
/// its result instead).
[[nodiscard]] report run_compare(compare_config const& config, std::ostream& progress);

}  // namespace gpufeed::bench
