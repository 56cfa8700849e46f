#include <array>
#include <string>
#include <vector>

#include "gpufeed/error.hpp"
#include "hdf5_field.hpp"

namespace gpufeed::detail::h5 {

void choose_read_path(field_info& f, std::size_t rows, bool forced_fallback,
                      std::string const& file) {
  auto const fail = [&](std::string const& message) { throw file_error(file, message); };
  auto const fallback = [&](std::string reason) {
    f.path = hdf5_read_path::h5dread;
    if (f.reason.empty()) f.reason = std::move(reason);
  };
  h5_id dcpl{H5Dget_create_plist(f.dset.get()), H5Pclose};
  if (!dcpl.valid()) fail(with_error("cannot read the layout of dataset '" + f.dataset + "'"));
  auto const rank = static_cast<int>(f.dims.size());
  switch (H5Pget_layout(dcpl.get())) {
    case H5D_CONTIGUOUS: {
      if (H5Pget_external_count(dcpl.get()) > 0) return fallback("external storage");
      haddr_t const offset = H5Dget_offset(f.dset.get());
      H5Eclear2(H5E_DEFAULT);
      if (offset == HADDR_UNDEF) {
        return fallback("storage never written (reads give the fill value)");
      }
      f.offset = offset;
      if (!forced_fallback) f.path = hdf5_read_path::contiguous;
      return;
    }
    case H5D_CHUNKED: {
      std::vector<hsize_t> cdims(f.dims.size());
      if (H5Pget_chunk(dcpl.get(), rank, cdims.data()) < 0) {
        fail(with_error("cannot read the chunk shape of dataset '" + f.dataset + "'"));
      }
      f.chunk_rows = static_cast<std::size_t>(cdims[0]);
      for (std::size_t d = 1; d < f.dims.size(); ++d) {
        if (cdims[d] != f.dims[d]) {
          return fallback("chunks " + dims_string(cdims) + " split the rows of " +
                          dims_string(f.dims) +
                          " (chunk dimensions after the first must be "
                          "the dataset's)");
        }
      }
      int const nfilters = H5Pget_nfilters(dcpl.get());
      for (int j = 0; j < nfilters; ++j) {
        unsigned flags = 0;
        std::size_t cd_count = 8;
        std::array<unsigned, 8> cd{};
        std::array<char, 64> name{};
        unsigned config = 0;
        H5Z_filter_t const id =
            H5Pget_filter2(dcpl.get(), static_cast<unsigned>(j), &flags, &cd_count, cd.data(),
                           name.size(), name.data(), &config);
        if (id == H5Z_FILTER_DEFLATE) {
          f.filters.push_back(filter_kind::deflate);
        } else if (id == H5Z_FILTER_SHUFFLE) {
          f.filters.push_back(filter_kind::shuffle);
        } else {
          H5Eclear2(H5E_DEFAULT);
          return fallback("filter '" + std::string{name.data()} + "' (id " + std::to_string(id) +
                          ") is decoded only by HDF5");
        }
      }
      unsigned chunk_opts = 0;
      if (!f.filters.empty() && H5Pget_chunk_opts(dcpl.get(), &chunk_opts) >= 0 &&
          (chunk_opts & H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS) != 0) {
        return fallback("partial edge chunks are stored unfiltered");
      }
      H5Eclear2(H5E_DEFAULT);
      // Rounded up without rows + chunk_rows - 1, which wraps for a first dimension near 2^64.
      std::size_t const nchunks =
          f.chunk_rows == 0 ? 0 : rows / f.chunk_rows + (rows % f.chunk_rows != 0 ? 1 : 0);
      // The chunk index is built at open, one entry per chunk: bound it, so that a file whose
      // metadata claims absurd dimensions cannot make the open allocate without limit.
      constexpr std::size_t max_indexed_chunks = std::size_t{1} << 24;
      if (nchunks > max_indexed_chunks) {
        return fallback(std::to_string(nchunks) + " chunks are more than the " +
                        std::to_string(max_indexed_chunks) + " gpufeed indexes at open");
      }
      f.chunks.resize(nchunks);
      std::vector<hsize_t> at(f.dims.size(), 0);
      for (std::size_t k = 0; k < nchunks; ++k) {
        at[0] = static_cast<hsize_t>(k) * static_cast<hsize_t>(f.chunk_rows);
        unsigned mask = 0;
        haddr_t address = HADDR_UNDEF;
        hsize_t stored = 0;
        if (H5Dget_chunk_info_by_coord(f.dset.get(), at.data(), &mask, &address, &stored) < 0) {
          H5Eclear2(H5E_DEFAULT);
          continue;  // treated as missing: H5Dread reads it
        }
        if (address != HADDR_UNDEF && stored > 0) f.chunks[k] = {address, stored, mask};
      }
      if (!forced_fallback) f.path = hdf5_read_path::chunked;
      return;
    }
    case H5D_COMPACT:
      return fallback("compact layout (the data lives in the object header)");
    case H5D_VIRTUAL:
      return fallback("virtual dataset");
    default:
      H5Eclear2(H5E_DEFAULT);
      return fallback("unknown layout");
  }
}

void learn_chunk_rows(field_info& f) {
  h5_id dcpl{H5Dget_create_plist(f.dset.get()), H5Pclose};
  if (dcpl.valid() && H5Pget_layout(dcpl.get()) == H5D_CHUNKED) {
    std::vector<hsize_t> cdims(f.dims.size());
    if (H5Pget_chunk(dcpl.get(), static_cast<int>(cdims.size()), cdims.data()) >= 0) {
      f.chunk_rows = static_cast<std::size_t>(cdims[0]);
    }
  }
  H5Eclear2(H5E_DEFAULT);
}

}  // namespace gpufeed::detail::h5
