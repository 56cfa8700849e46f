#pragma once
// train_ddp's command line.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace train_ddp {

struct run_options {
  std::uint64_t epochs = 3;
  std::size_t batch_size = 32;  ///< per rank: a step trains on world_size x batch_size samples
  std::size_t steps = 0;        ///< most optimizer steps per epoch; 0: the whole epoch
  std::size_t samples = 4'096;  ///< dataset size
  std::size_t features = 8;     ///< length of each sample's x
  std::size_t chunk = 0;  ///< storage chunk the dataset reports (chunk-aware shuffle); 0: none
  std::size_t chunk_window = 2;  ///< chunks drawn from together when chunk > 1
  std::uint64_t seed = 0;  ///< data, target, initial weights and shuffle: the same on every rank
  double lr = 0.1;
  unsigned workers = 2;
  std::string backend =
      "auto";                ///< auto (NCCL on a GPU where built with it, else Gloo), gloo, nccl
  double timeout_s = 300;    ///< rendezvous and collective timeout
  std::string dump_indices;  ///< path prefix; empty: none
  std::string dump_weights;  ///< path prefix; empty: none
};

/// Parses the command line into `options`; returns an exit code when the program should stop
/// (--help, or a bad argument, already reported on the standard streams).
[[nodiscard]] std::optional<int> parse(int argc, char** argv, run_options& options);

}  // namespace train_ddp
