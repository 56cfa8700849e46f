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
#include "dataset_options.hpp"
#include "json_report.hpp"

namespace CLI {
class App;
}

namespace gpufeed::bench {

struct compare_config {
  common_options common;
  dataset_options input;  ///< what every peer reads; gpufeed's order (the torch peers shuffle)
  std::string on_error = "raise";  ///< raise | skip
  std::vector<std::string> peers = {"gpufeed", "torch_cpp", "torch_python"};
  std::size_t repeats = 3;
  std::size_t warmup = 10;            ///< untimed batches before each timed run (every peer)
  std::size_t torch_cpp_batches = 0;  ///< timed batches of torch_cpp; 0: --batches
  std::size_t python_batches = 300;   ///< timed batches of torch_python; 0: --batches
  std::string python = "/usr/bin/python3";
};

/// Registers the `compare` subcommand and its flags, which write into `config`.
CLI::App* add_compare_command(CLI::App& app, compare_config& config);

/// Runs the comparison, printing one line per run and the ratios to `progress`.
/// @throws std::exception on bad settings or a gpufeed error (a peer's failure is reported in
/// its result instead).
[[nodiscard]] report run_compare(compare_config const& config, std::ostream& progress);

}  // namespace gpufeed::bench
