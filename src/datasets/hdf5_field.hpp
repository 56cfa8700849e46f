#pragma once
// One field of an HDF5 dataset (a dataset in the file): its shape and type, and how its rows are
// read. Internal to src/datasets.

#include <hdf5.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpufeed/datasets/hdf5.hpp"
#include "gpufeed/dtype.hpp"
#include "hdf5_chunk_cache.hpp"
#include "hdf5_handle.hpp"

namespace gpufeed::detail::h5 {

enum class filter_kind : std::uint8_t { deflate, shuffle };

struct chunk_ref {
  std::uint64_t address = 0;
  std::uint64_t stored = 0;  // 0: never written (reads give the fill value, through H5Dread)
  unsigned mask = 0;         // bit j set: filter j of the pipeline was not applied to this chunk
};

struct field_info {
  std::string dataset;  // path in the file
  std::string name;     // field name
  dtype type = dtype::u8;
  std::size_t element_bytes = 1;
  std::vector<hsize_t> dims;
  std::size_t row_bytes = 0;
  hdf5_read_path path = hdf5_read_path::h5dread;
  std::string reason;
  std::uint64_t offset = 0;    // contiguous
  std::size_t chunk_rows = 0;  // chunked layout (any path)
  std::vector<chunk_ref> chunks;
  std::vector<filter_kind> filters;  // in pipeline (write) order
  h5_id dset;
  h5_id mem_type;
  std::atomic<bool> missing_chunk_logged{false};

  chunk_cache cache;  // decoded chunks, shared by the workers

  [[nodiscard]] std::size_t chunk_bytes() const noexcept { return chunk_rows * row_bytes; }
};

// Decides how `f` (of a dataset of `rows` samples in `file`) is read: pread at an offset
// (contiguous), pread and gpufeed's own decoding per chunk (chunked), or H5Dread, with the reason
// in f.reason. With `forced_fallback` it only learns the layout (the reason is set already).
// Throws file_error where the file's metadata cannot be read.
void choose_read_path(field_info& f, std::size_t rows, bool forced_fallback,
                      std::string const& file);

// Learns f's chunk rows only (storage_chunk() reports them even where H5Dread reads).
void learn_chunk_rows(field_info& f);

}  // namespace gpufeed::detail::h5
