#include "compare_dataset.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "common_options.hpp"
#include "gpufeed/datasets/in_memory.hpp"
#include "gpufeed/datasets/synthetic.hpp"

#if defined(GPUFEED_WITH_HDF5) && __has_include("gpufeed/datasets/hdf5.hpp")
#include "gpufeed/datasets/hdf5.hpp"
#define GPUFEED_BENCH_HDF5 1
#else
#define GPUFEED_BENCH_HDF5 0
#endif
#if defined(GPUFEED_WITH_IMAGES) && __has_include("gpufeed/datasets/image_folder.hpp")
#include "gpufeed/datasets/image_folder.hpp"
#define GPUFEED_BENCH_IMAGES 1
#else
#define GPUFEED_BENCH_IMAGES 0
#endif

namespace gpufeed::bench {
namespace {

[[noreturn]] void bad_dataset(std::string const& text) {
  throw std::invalid_argument{"--dataset " + text +
                              ": expected synthetic, memory, hdf5:PATH, hdf5:PATH:name1,name2 or "
                              "images:DIR"};
}

#if GPUFEED_BENCH_HDF5
char const* to_string(hdf5_read_path path) {
  switch (path) {
    case hdf5_read_path::contiguous:
      return "contiguous";
    case hdf5_read_path::chunked:
      return "chunked";
    case hdf5_read_path::h5dread:
      return "h5dread";
  }
  return "?";
}
#endif

}  // namespace

dataset_choice parse_dataset(std::string const& text) {
  dataset_choice choice;
  if (text == "synthetic") return choice;
  if (text == "memory") {
    choice.kind = dataset_kind::memory;
    return choice;
  }
  if (text.starts_with("hdf5:")) {
    choice.kind = dataset_kind::hdf5;
    std::string rest = text.substr(5);
    // hdf5:PATH:a,b: the part after the last ':' names datasets when it holds no '/'.
    auto const colon = rest.rfind(':');
    if (colon != std::string::npos && colon > 0 && rest.find('/', colon) == std::string::npos) {
      for (auto& name : split(rest.substr(colon + 1), ',')) {
        if (name.empty()) bad_dataset(text);
        choice.fields.push_back(name);
      }
      rest.resize(colon);
    }
    if (rest.empty()) bad_dataset(text);
    choice.path = rest;
    return choice;
  }
  if (text.starts_with("images:") && text.size() > 7) {
    choice.kind = dataset_kind::images;
    choice.path = text.substr(7);
    return choice;
  }
  bad_dataset(text);
}

std::vector<std::int64_t> synthetic_image_shape(std::size_t sample_bytes) {
  auto const side =
      static_cast<std::size_t>(std::lround(std::sqrt(static_cast<double>(sample_bytes) / 3.0)));
  if (side > 0 && 3 * side * side == sample_bytes) {
    auto const s = static_cast<std::int64_t>(side);
    return {3, s, s};
  }
  return {static_cast<std::int64_t>(sample_bytes)};
}

compare_dataset make_compare_dataset(dataset_choice const& choice, dataset_options const& input) {
  compare_dataset out;
  switch (choice.kind) {
    case dataset_kind::synthetic: {
      auto spec = gpufeed::sample_spec{}
                      .add("image", gpufeed::dtype::u8, synthetic_image_shape(input.sample_bytes))
                      .add("label", gpufeed::dtype::i64, {});
      gpufeed::synthetic_options options;
      options.seed = input.seed;
      options.cpu_cost = std::chrono::nanoseconds{std::llround(input.cpu_cost_us * 1000.0)};
      options.sleep = std::chrono::nanoseconds{std::llround(input.wait_us * 1000.0)};
      auto data = std::make_shared<gpufeed::synthetic>(input.samples, spec, options);
      out.data = data;
      out.torch_cpp_data = data;  // the same reads: generate the bytes, burn the CPU cost
      out.description = {{"kind", "synthetic"},
                         {"samples", input.samples},
                         {"spec", spec.to_string()},
                         {"cpu_cost_us", input.cpu_cost_us},
                         {"wait_us", input.wait_us}};
      return out;
    }
    case dataset_kind::memory: {
      // The synthetic dataset's content, made once and held in memory: one array per field.
      auto spec = gpufeed::sample_spec{}
                      .add("image", gpufeed::dtype::u8, synthetic_image_shape(input.sample_bytes))
                      .add("label", gpufeed::dtype::i64, {});
      gpufeed::synthetic_options options;
      options.seed = input.seed;
      gpufeed::synthetic const source{input.samples, spec, options};
      auto arrays = std::make_shared<std::vector<std::vector<std::byte>>>();
      for (std::size_t f = 0; f < spec.size(); ++f) {
        std::size_t const row = spec[f].bytes();
        auto& array = arrays->emplace_back(input.samples * row);
        for (std::size_t i = 0; i < input.samples; ++i) {
          source.expected(i, f, std::span{array}.subspan(i * row, row));
        }
      }
      auto data = std::make_shared<gpufeed::in_memory>(input.samples);
      for (std::size_t f = 0; f < spec.size(); ++f) {
        out.columns.emplace_back((*arrays)[f]);
        data->add_bytes(spec[f].name, spec[f].type, spec[f].shape, out.columns.back(), arrays);
      }
      out.columns_owner = arrays;
      out.data = data;
      out.torch_cpp_data = data;
      out.description = {{"kind", "memory"},
                         {"samples", input.samples},
                         {"spec", spec.to_string()},
                         {"bytes", input.samples * spec.bytes_per_sample()}};
      return out;
    }
    case dataset_kind::hdf5: {
#if GPUFEED_BENCH_HDF5
      gpufeed::hdf5_options options;
      options.fields = choice.fields;
      // Twice the window, as docs/datasets-hdf5.md advises: workers that prefetch start on the
      // next window while the current one is still being read.
      options.cache_chunks = std::max<std::size_t>(8, 2 * effective_chunk_window(input));
      auto data = std::make_shared<gpufeed::hdf5_dataset>(choice.path, options);
      // libtorch users read HDF5 with H5Dread (through the C or C++ API) in get().
      options.force_h5dread = true;
      out.torch_cpp_data = std::make_shared<gpufeed::hdf5_dataset>(choice.path, options);
      json paths = json::array();
      for (std::size_t f = 0; f < data->spec().size(); ++f) {
        paths.push_back(to_string(data->read_path(f)));
        out.chunked = out.chunked || data->read_path(f) != hdf5_read_path::contiguous;
      }
      out.description = {{"kind", "hdf5"},
                         {"path", choice.path},
                         {"samples", data->size()},
                         {"spec", data->spec().to_string()},
                         {"read_paths", paths},
                         {"storage_chunk", data->storage_chunk()},
                         {"cache_chunks", options.cache_chunks},
                         {"torch_cpp_read_path", "h5dread"}};
      out.data = data;
      return out;
#else
      throw std::invalid_argument{"--dataset hdf5:...: this gpufeed was built without HDF5"};
#endif
    }
    case dataset_kind::images: {
#if GPUFEED_BENCH_IMAGES
      gpufeed::image_options options;
      options.height = input.image_size;
      options.width = input.image_size;
      options.resize = gpufeed::resize_mode::random_resized_crop;
      options.horizontal_flip = true;
      auto data = std::make_shared<gpufeed::image_folder>(choice.path, options);
      // libtorch users decode the whole image at full size (cv::imread), then crop, resize and
      // convert: none of the image path's decode shortcuts on that side.
      options.full_decoding = true;
      out.torch_cpp_data = std::make_shared<gpufeed::image_folder>(choice.path, options);
      out.image_to_float = true;
      out.description = {{"kind", "images"},
                         {"path", choice.path},
                         {"samples", data->size()},
                         {"classes", data->classes().size()},
                         {"spec", data->spec().to_string()},
                         {"augment", "random_resized_crop + horizontal_flip"}};
      out.data = data;
      return out;
#else
      throw std::invalid_argument{
          "--dataset images:...: this gpufeed was built without the image datasets (libjpeg and "
          "libpng)"};
#endif
    }
  }
  bad_dataset("?");
}

}  // namespace gpufeed::bench
