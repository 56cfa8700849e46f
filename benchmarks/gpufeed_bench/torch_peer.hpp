#pragma once
// The torch_cpp peer of `gpufeed-bench compare`: libtorch's own loader,
// torch::data::make_data_loader<RandomSampler> over a torch::data::datasets::Dataset whose get(i)
// builds the sample's tensors, mapped through Stack<>, as libtorch users write it.
//
// Compiled only when CMake finds Torch (GPUFEED_BENCH_WITH_TORCH); this header includes no
// libtorch header, so the rest of gpufeed-bench builds without it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpufeed/dataset.hpp"
#include "peer_run.hpp"

namespace gpufeed::bench {

struct torch_cpp_config {
  /// What get(i) reads: sample i of this dataset, into freshly allocated tensors (one per field).
  /// Example::data is field 0 and Example::target field 1 (an empty tensor when there is none).
  std::shared_ptr<gpufeed::dataset const> data;
  /// Field 0 is an HWC uint8 image: get() converts it to a CHW float tensor in [0, 1], as
  /// libtorch image code does before Stack.
  bool image_to_float = false;
  /// When not empty: the dataset's fields as whole arrays in memory (size() rows each). get(i)
  /// then returns views of row i of tensors over them, as torchvision's MNIST dataset does, and
  /// Stack copies them; `data` only gives the spec.
  std::vector<std::span<std::byte const>> columns;
  std::size_t batch_size = 64;
  unsigned workers = 2;
  std::size_t warmup = 10;    ///< untimed batches first
  std::size_t batches = 200;  ///< timed batches
};

/// Runs libtorch's loader once (a fresh loader), crossing epoch ends as needed.
/// @throws std::invalid_argument when the dataset has more than two fields (Example<> holds
/// two tensors); std::exception on a read error.
[[nodiscard]] peer_run run_torch_cpp(torch_cpp_config const& config);

/// libtorch's version, e.g. "1.13.0".
[[nodiscard]] std::string torch_cpp_version();

}  // namespace gpufeed::bench
