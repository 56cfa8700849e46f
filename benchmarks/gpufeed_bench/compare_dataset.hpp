#pragma once
// The datasets `gpufeed-bench compare` runs its peers on: --dataset synthetic | memory
// | hdf5:PATH[:a,b] | images:DIR, built once for gpufeed and once for libtorch's loader.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bench_json.hpp"
#include "dataset_options.hpp"
#include "gpufeed/dataset.hpp"

namespace gpufeed::bench {

enum class dataset_kind : std::uint8_t { synthetic, memory, hdf5, images };

/// A parsed --dataset value.
struct dataset_choice {
  dataset_kind kind = dataset_kind::synthetic;
  std::string path;                 ///< hdf5: the file; images: the folder
  std::vector<std::string> fields;  ///< hdf5: the named datasets (empty: all, in name order)
};

/// @throws std::invalid_argument naming the accepted forms.
[[nodiscard]] dataset_choice parse_dataset(std::string const& text);

/// The synthetic "image" field's shape: [3, s, s] when sample_bytes is 3 s^2, else [bytes].
[[nodiscard]] std::vector<std::int64_t> synthetic_image_shape(std::size_t sample_bytes);

struct compare_dataset {
  std::shared_ptr<gpufeed::dataset const> data;            ///< what gpufeed reads
  std::shared_ptr<gpufeed::dataset const> torch_cpp_data;  ///< what libtorch's get() reads
  bool image_to_float = false;  ///< libtorch's get() converts the image to float CHW
  bool chunked = false;         ///< hdf5: some field is stored in compressed/chunked form
  /// memory: each field's rows (size() x field bytes), which libtorch's dataset views as tensors
  /// (as torchvision's MNIST does) instead of reading `torch_cpp_data`.
  std::vector<std::span<std::byte const>> columns;
  std::shared_ptr<void const> columns_owner;
  json description = json::object();
};

/// Opens or makes the dataset `choice` (parse_dataset of --dataset) with the settings in
/// `options`: synthetic and memory take --samples, --sample-bytes and --seed (synthetic also
/// --cpu-cost-us and --wait-us), images --image-size, and hdf5 sizes its chunk cache for
/// effective_chunk_window. @throws std::invalid_argument when the kind was not built in
/// (no HDF5 / OpenCV); the dataset's own errors otherwise.
[[nodiscard]] compare_dataset make_compare_dataset(dataset_choice const& choice,
                                                   dataset_options const& options);

}  // namespace gpufeed::bench
