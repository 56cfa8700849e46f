#pragma once
// The torch_python peer of `gpufeed-bench compare`: benchmarks/python/torch_peer.py
// (torch.utils.data.DataLoader) run as a subprocess, one timed run per call.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "peer_run.hpp"

namespace gpufeed::bench {

struct python_peer_config {
  std::string python = "/usr/bin/python3";  ///< the interpreter (Debian's, which has torch)
  std::string script;                       ///< torch_peer.py
  std::string dataset;                      ///< the --dataset text, passed through
  std::size_t batch_size = 64;
  unsigned workers = 2;
  std::size_t prefetch_factor = 2;
  std::size_t warmup = 10;
  std::size_t batches = 200;
  std::uint64_t seed = 0;
  std::string on_error = "raise";
  std::size_t samples = 50'000;     ///< synthetic
  std::vector<std::int64_t> shape;  ///< synthetic image field
  double cpu_cost_us = 0;           ///< synthetic
  int image_size = 224;             ///< images
};

/// torch_peer.py next to the sources (GPUFEED_BENCH_PYTHON_DIR) or at
/// <executable>/../../benchmarks/python; empty when neither exists.
[[nodiscard]] std::string find_python_script();

/// Why the peer cannot run (no interpreter, no script, no torch: the probe's answer), or nothing.
/// On success `versions` holds the probe's JSON.
[[nodiscard]] std::optional<std::string> python_peer_unavailable(python_peer_config const& config,
                                                                 json& versions);

/// One run of the script. @throws std::runtime_error with the script's last output lines.
[[nodiscard]] peer_run run_python_peer(python_peer_config const& config);

}  // namespace gpufeed::bench
