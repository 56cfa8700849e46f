// libFuzzer target for gpufeed::hdf5_dataset: opening HDF5 files and reading every row.
//
// Structure-aware: the input does not go to H5Fopen as raw bytes. Fuzzing HDF5 1.10's own parser
// that way finds crashes inside HDF5 (e.g. H5VM_memcpyvv under H5Dread of corrupt contiguous
// metadata) that gpufeed cannot fix. Instead the first bytes choose a valid file's shape, type,
// layout and filters (written through the HDF5 C API), the next ones its data, and the rest are
// (offset, xor) pairs that corrupt the stored bytes of its chunks or contiguous data afterwards.
// That drives what gpufeed itself does with a file: the layout and filter analysis at open, the
// chunk index, pread, inflate and un-shuffle of damaged chunks. The only acceptable failures are
// gpufeed's own exceptions; a crash, an abort, exit() or another exception is a finding.
//
//   build: clang, tests/hdf5_tests.cmake (built in scripts/test's build-fuzz/)
//   run:   mkdir -p DIR && hdf5_open_fuzz -seed=1 -runs=N DIR

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gpufeed/datasets/hdf5.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/sample_view.hpp"

namespace {

struct byte_reader {
  std::uint8_t const* data;
  std::size_t size;
  std::size_t at = 0;
  std::uint8_t next() { return at < size ? data[at++] : 0; }
  [[nodiscard]] std::size_t left() const { return size - at; }
};

std::string const& scratch_file() {
  static std::string const path = (std::filesystem::temp_directory_path() /
                                   ("gpufeed-hdf5-fuzz-" + std::to_string(::getpid()) + ".h5"))
                                      .string();
  return path;
}

struct stored_range {
  haddr_t address;
  hsize_t bytes;
};

// Writes the file the input describes; returns where its raw data was stored.
std::vector<stored_range> write_file(byte_reader& in) {
  std::array const types{H5T_NATIVE_UINT8, H5T_NATIVE_INT16, H5T_NATIVE_INT32,
                         H5T_NATIVE_INT64, H5T_NATIVE_FLOAT, H5T_NATIVE_DOUBLE};
  auto const layout = in.next() % 5;  // contiguous, chunked, +deflate, +shuffle+deflate, +shuffle
  hid_t const type = types[in.next() % types.size()];
  hsize_t const rows = 1U + in.next() % 64U;
  hsize_t const width = 1U + in.next() % 8U;
  hsize_t const chunk_rows = 1U + in.next() % rows;
  std::array<hsize_t, 2> const dims{rows, width};
  std::array<hsize_t, 2> const chunk{chunk_rows, width};

  std::vector<std::uint8_t> values(rows * width * H5Tget_size(type));
  for (auto& v : values) v = in.next();

  hid_t const file = H5Fcreate(scratch_file().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t const space = H5Screate_simple(2, dims.data(), nullptr);
  hid_t const plist = H5Pcreate(H5P_DATASET_CREATE);
  if (layout > 0) H5Pset_chunk(plist, 2, chunk.data());
  if (layout == 3 || layout == 4) H5Pset_shuffle(plist);
  if (layout == 2 || layout == 3) H5Pset_deflate(plist, 1);
  hid_t const dset = H5Dcreate2(file, "x", type, space, H5P_DEFAULT, plist, H5P_DEFAULT);
  H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Fflush(file, H5F_SCOPE_LOCAL);

  std::vector<stored_range> ranges;
  if (layout == 0) {
    ranges.push_back({H5Dget_offset(dset), values.size()});
  } else {
    hsize_t count = 0;
    H5Dget_num_chunks(dset, H5S_ALL, &count);
    for (hsize_t k = 0; k < count; ++k) {
      std::array<hsize_t, 2> offset{};
      unsigned mask = 0;
      stored_range r{HADDR_UNDEF, 0};
      if (H5Dget_chunk_info(dset, H5S_ALL, k, offset.data(), &mask, &r.address, &r.bytes) >= 0) {
        ranges.push_back(r);
      }
    }
  }
  H5Dclose(dset);
  H5Pclose(plist);
  H5Sclose(space);
  H5Fclose(file);
  std::erase_if(ranges, [](auto const& r) { return r.address == HADDR_UNDEF || r.bytes == 0; });
  return ranges;
}

// Applies the input's remaining (chunk, offset, xor) triples to the stored bytes.
void corrupt(byte_reader& in, std::vector<stored_range> const& ranges) {
  if (ranges.empty()) return;
  int const fd = ::open(scratch_file().c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  while (in.left() >= 3) {
    auto const& r = ranges[in.next() % ranges.size()];
    auto const offset = static_cast<off_t>(r.address + in.next() % r.bytes);
    std::uint8_t byte = 0;
    if (::pread(fd, &byte, 1, offset) == 1) {
      byte = static_cast<std::uint8_t>(byte ^ in.next());
      (void)!::pwrite(fd, &byte, 1, offset);
    }
  }
  ::close(fd);
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // HDF5 would print an error stack per input
  return 0;
}

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  byte_reader in{data, size};
  auto const ranges = write_file(in);
  corrupt(in, ranges);
  try {
    gpufeed::hdf5_dataset const dataset{scratch_file()};
    auto const spec = dataset.spec();
    gpufeed::detail::slot_layout const layout{spec, 1};
    std::vector<std::byte> slot(layout.slot_bytes());
    for (std::size_t i = 0; i < dataset.size(); ++i) {
      gpufeed::read_context ctx;
      ctx.index = i;
      ctx.worker = static_cast<unsigned>(i % 3);  // per-worker buffers and the shared cache
      try {
        dataset.read(i, gpufeed::sample_view{layout, slot.data(), 0}, ctx);
      } catch (gpufeed::file_error const&) {  // a damaged chunk: the next rows still read
      }
    }
  } catch (gpufeed::file_error const&) {
  } catch (gpufeed::logic_error const&) {
  }
  return 0;
}
