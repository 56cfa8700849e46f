#pragma once
/// @file
/// @brief Samples from the rows of HDF5 datasets, read in parallel without HDF5's global lock.
///
/// @code
/// // /images: N x 64 x 64 x 3 uint8 (chunked, gzip), /labels: N int64
/// auto data = std::make_shared<gpufeed::hdf5_dataset>(
///     "train.h5", gpufeed::hdf5_options{.fields = {"images", "labels"}, .cache_chunks = 8});
/// gpufeed::loader_options opts{.batch_size = 256, .workers = 8, .shuffle = true,
///                              .chunk_window = 4};  // chunk-aware shuffle; cache_chunks >= 2x
/// gpufeed::loader loader{data, opts};
/// @endcode
///
/// Only available when gpufeed was built with HDF5 (`GPUFEED_WITH_HDF5`).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpufeed/dataset.hpp"

namespace gpufeed {

/// @brief How an `hdf5_dataset` opens its file.
struct hdf5_options {
  /// The HDF5 datasets that become the sample's fields, in this order (paths such as "images"
  /// or "/group/labels"; the field is named after the path without its leading '/'). Empty: every
  /// top-level dataset whose first dimension is the sample count (the first dimension shared by
  /// the most top-level datasets), in name order.
  std::vector<std::string> fields{};
  /// Decompressed chunks kept per field, shared by all workers (least recently used goes first;
  /// the first worker that needs a chunk decodes it, the others wait for it rather than decode it
  /// again). Set it to at least `loader_options::chunk_window`, better twice that (prefetching
  /// workers read from the next window while the consumer finishes the current one), so that a
  /// chunk-aware shuffle decompresses each chunk once per epoch. At least 1.
  std::size_t cache_chunks = 8;
  /// Read every field through `H5Dread` (serialized on one lock) instead of `pread`: for
  /// comparisons and as an escape hatch.
  bool force_h5dread = false;
};

/// @brief How one field of an `hdf5_dataset` is read.
enum class hdf5_read_path : std::uint8_t {
  contiguous,  ///< `pread` of the row at the dataset's file offset; no HDF5 call, no lock
  chunked,     ///< `pread` of the chunk, inflate/unshuffle outside HDF5, per-worker chunk cache
  h5dread,     ///< `H5Dread` of a one-row hyperslab under a mutex (logged once at open)
};

/// @brief A dataset whose sample i is row i of one or more HDF5 datasets that share their first
/// dimension.
///
/// At open the file is inspected once through the HDF5 C API: types are mapped to `dtype`
/// (u8, i8, u16, i16, i32, i64, f16, bf16, f32, f64), shapes are the datasets' dimensions after
/// the first, and the file offsets of contiguous data and of every chunk are collected. `read`
/// then calls no HDF5 function for contiguous datasets and for chunked ones whose chunks span
/// whole rows with no filter or only deflate and shuffle: it uses `pread` on a descriptor of its
/// own and decompresses with zlib, so reads scale with workers despite the thread-safe HDF5
/// build's global lock. Other layouts and filters fall back to `H5Dread` (see `read_path`).
///
/// Thread-safety: `read` may be called concurrently. Each worker (`read_context::worker`) has its
/// own read and decompression buffers, created on its first read and guarded by their own
/// (uncontended) mutex; the decoded chunks are shared by all workers (a short lock to look a
/// chunk up; decompression runs outside it). The file must not be modified while it is open.
class hdf5_dataset final : public dataset {
 public:
  /// @brief Opens `path` and checks its fields.
  /// @param path the HDF5 file. @param options which datasets, cache size, forced fallback.
  /// @throws file_error naming the file if it is missing, not HDF5, or unreadable; if a field is
  /// missing, not a dataset, a scalar, of a type with no `dtype` (the message names the dataset
  /// and its type), or if the fields' first dimensions disagree (the message names both datasets
  /// and their sizes). @throws logic_error if `options.cache_chunks` is 0.
  explicit hdf5_dataset(std::string path, hdf5_options options = {});
  ~hdf5_dataset() override;
  hdf5_dataset(hdf5_dataset const&) = delete;
  hdf5_dataset& operator=(hdf5_dataset const&) = delete;
  hdf5_dataset(hdf5_dataset&&) = delete;
  hdf5_dataset& operator=(hdf5_dataset&&) = delete;

  /// @brief Number of samples (the fields' common first dimension).
  [[nodiscard]] std::size_t size() const override;
  /// @brief One field per HDF5 dataset, with the dataset's type and its dimensions after the first.
  [[nodiscard]] sample_spec spec() const override;
  /// @brief Writes row `index` of every field into `out`. Thread-safe.
  /// @throws file_error naming the file, the field, the index and the file offset when the file
  /// is shorter than its metadata says, when a chunk does not decompress, or when `H5Dread`
  /// fails. @throws logic_error if `index >= size()`.
  void read(std::size_t index, sample_view out, read_context const& ctx) const override;
  /// @brief Rows per chunk of the chunked field whose chunks are largest in bytes (the costliest
  /// to decompress), or 0 when no field is chunked.
  [[nodiscard]] std::size_t storage_chunk() const override;

  /// @brief The file's path, as given.
  [[nodiscard]] std::string const& path() const noexcept;
  /// @brief How field `f` is read. @throws logic_error if `f` is out of range.
  [[nodiscard]] hdf5_read_path read_path(std::size_t f) const;
  /// @brief Why field `f` is read through `H5Dread`, or an empty string when it is not.
  [[nodiscard]] std::string_view fallback_reason(std::size_t f) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace gpufeed
