// The HDF5 dataset's refusals and errors: first dimensions that disagree, missing files and
// datasets, unsupported types, truncated and corrupt files, and sizes that do not fit.

#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <ios>
#include <memory>
#include <string>
#include <vector>

#include "gpufeed/datasets/hdf5.hpp"
#include "gpufeed/gpufeed.hpp"
#include "support/hdf5_files.hpp"

namespace {

using namespace gpufeed::test::hdf5_files;  // NOLINT(google-build-using-namespace): fixtures

// ------------------------------------------------------------------------------------------------
// Bad input

TEST_F(hdf5_test, FirstDimensionsMustAgree) {
  auto const path = make_file("mismatch.h5", {});
  hid_t const file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  std::vector<std::int64_t> other(rows + 1, 5);
  write_dataset(file, "other", H5T_STD_I64LE, H5T_NATIVE_INT64, {rows + 1}, other.data(), {});
  H5Fclose(file);
  try {
    hdf5_dataset d{path, hdf5_options{.fields = {"labels", "other"}}};
    FAIL() << "expected a file_error";
  } catch (gpufeed::file_error const& e) {
    std::string const what = e.what();
    EXPECT_EQ(e.path(), path);
    EXPECT_NE(what.find("'labels'"), std::string::npos) << what;
    EXPECT_NE(what.find("'other'"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(rows)), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(rows + 1)), std::string::npos) << what;
  }
}

TEST_F(hdf5_test, MissingFileNamesThePath) {
  auto const path = (dir_ / "nope.h5").string();
  try {
    hdf5_dataset d{path};
    FAIL() << "expected a file_error";
  } catch (gpufeed::file_error const& e) {
    EXPECT_EQ(e.path(), path);
    EXPECT_NE(std::string{e.what()}.find(path), std::string::npos);
  }
}

TEST_F(hdf5_test, NotHdf5NamesThePath) {
  auto const path = (dir_ / "text.h5").string();
  std::ofstream{path} << "this is not an HDF5 file\n";
  try {
    hdf5_dataset d{path};
    FAIL() << "expected a file_error";
  } catch (gpufeed::file_error const& e) {
    EXPECT_EQ(e.path(), path);
    EXPECT_NE(std::string{e.what()}.find("not an HDF5 file"), std::string::npos) << e.what();
  }
}

TEST_F(hdf5_test, MissingDatasetAndUnsupportedType) {
  auto const path = make_file("types.h5", {});
  hid_t const file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  std::vector<std::uint32_t> u32(rows, 1);
  write_dataset(file, "u32", H5T_STD_U32LE, H5T_NATIVE_UINT32, {rows}, u32.data(), {});
  H5Fclose(file);
  EXPECT_THROW(hdf5_dataset(path, hdf5_options{.fields = {"absent"}}), gpufeed::file_error);
  try {
    hdf5_dataset d{path, hdf5_options{.fields = {"labels", "u32"}}};
    FAIL() << "expected a file_error";
  } catch (gpufeed::file_error const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("'u32'"), std::string::npos) << what;
    EXPECT_NE(what.find("32-bit unsigned integer"), std::string::npos) << what;
  }
  EXPECT_THROW(hdf5_dataset(path, hdf5_options{.cache_chunks = 0}), gpufeed::logic_error);
}

TEST_F(hdf5_test, TruncatedBeforeOpen) {
  auto const path = make_file("cut.h5", {});
  fs::resize_file(path, fs::file_size(path) / 2);
  try {
    hdf5_dataset d{path};
    FAIL() << "expected a file_error";
  } catch (gpufeed::file_error const& e) {
    EXPECT_EQ(e.path(), path);
  }
}

TEST_F(hdf5_test, TruncatedUnderTheLoader) {
  for (bool chunked : {false, true}) {
    auto const path =
        make_file(chunked ? "cut-z.h5" : "cut-c.h5", {.chunked = chunked, .deflate = chunked});
    auto const d = std::make_shared<hdf5_dataset const>(path);
    fs::resize_file(path, fs::file_size(path) * 3 / 4);
    {
      auto o = gpufeed::test::small_options(5, 3);
      gpufeed::loader l{d, o};
      bool raised = false;
      try {
        while (auto b = l.next()) {
        }
      } catch (gpufeed::sample_error const& e) {
        raised = true;
        EXPECT_EQ(e.file(), path) << e.what();
      }
      EXPECT_TRUE(raised) << "chunked " << chunked;
    }
    {
      auto o = gpufeed::test::small_options(5, 3);
      o.on_error = gpufeed::error_policy::skip;
      gpufeed::loader l{d, o};
      std::size_t seen = 0;
      while (auto b = l.next()) {
        for (std::size_t r = 0; r < b->size(); ++r) {
          auto const bytes = b->field(1).as<std::byte>();
          auto const first = bytes.begin() + static_cast<std::ptrdiff_t>(r * 8);
          EXPECT_EQ(bytes_t(first, first + 8), expected().row(1, b->indices()[r]));
        }
        seen += b->size();
      }
      auto const s = l.snapshot();
      EXPECT_GT(s.skipped, 0U);
      EXPECT_EQ(seen + s.skipped, rows);
    }
  }
}

TEST_F(hdf5_test, CorruptChunkIsAnError) {
  auto const path = make_file("corrupt.h5", {.chunked = true, .shuffle = true, .deflate = true});
  haddr_t address = 0;
  hsize_t stored = 0;
  {
    hid_t const file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t const dset = H5Dopen2(file, "images", H5P_DEFAULT);
    std::vector<hsize_t> at{chunk_rows, 0, 0, 0};  // chunk 1
    unsigned mask = 0;
    ASSERT_GE(H5Dget_chunk_info_by_coord(dset, at.data(), &mask, &address, &stored), 0);
    H5Dclose(dset);
    H5Fclose(file);
  }
  {
    std::fstream io{path, std::ios::in | std::ios::out | std::ios::binary};
    io.seekp(static_cast<std::streamoff>(address));
    std::string const junk(static_cast<std::size_t>(std::min<hsize_t>(stored, 64)), '\xff');
    io.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  hdf5_dataset d{path};
  EXPECT_EQ(read_sample(d, 0)[0], expected().row(0, 0));  // chunk 0 is intact
  try {
    (void)read_sample(d, chunk_rows + 1);
    FAIL() << "expected a file_error";
  } catch (gpufeed::file_error const& e) {
    EXPECT_EQ(e.path(), path);
    EXPECT_NE(std::string{e.what()}.find("images"), std::string::npos) << e.what();
  }
  // A failed decode leaves nothing behind in the cache: the next read fails again.
  EXPECT_THROW((void)read_sample(d, chunk_rows + 2), gpufeed::file_error);
  EXPECT_EQ(read_sample(d, 2 * chunk_rows)[0], expected().row(0, 2 * chunk_rows));
}

// ------------------------------------------------------------------------------------------------
// Sizes that do not fit

// Writes a chunked dataset `name` of `type` with `dims` and never writes a chunk: however large
// the dimensions, the file stays small (sparse: nothing is stored).
void write_sparse(std::string const& path, char const* name, hid_t type,
                  std::vector<hsize_t> const& dims, std::vector<hsize_t> const& chunk) {
  hid_t const file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  check(file, "create");
  hid_t const space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t const plist = H5Pcreate(H5P_DATASET_CREATE);
  check(H5Pset_chunk(plist, static_cast<int>(chunk.size()), chunk.data()), "chunk");
  hid_t const dset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, plist, H5P_DEFAULT);
  check(dset, name);
  H5Dclose(dset);
  H5Pclose(plist);
  H5Sclose(space);
  H5Fclose(file);
}

std::string file_error_of(std::string const& path) {
  try {
    hdf5_dataset const d{path};
    ADD_FAILURE() << "opened, with " << d.spec().bytes_per_sample() << " bytes per sample";
  } catch (gpufeed::file_error const& e) {
    EXPECT_EQ(e.path(), path);
    return e.what();
  }
  return {};
}

// Before sizes were checked, a row of [2^31, 2^31] float32 was 2^64 bytes, which wrapped to 0:
// the dataset opened with a zero-byte sample, and H5Dread was handed a zero-byte buffer for it.
TEST_F(hdf5_test, HugeDimensionsAreRefusedNotWrapped) {
  auto const path = (dir_ / "huge-dims.h5").string();
  hsize_t const two_to_31 = hsize_t{1} << 31;
  write_sparse(path, "x", H5T_IEEE_F32LE, {2, two_to_31, two_to_31}, {1, 1024, 1024});
  EXPECT_LT(fs::file_size(path), std::uintmax_t{1} << 20);  // declared, not stored
  auto const what = file_error_of(path);
  EXPECT_NE(what.find("dataset 'x' [2,2147483648,2147483648] cannot be a field"), std::string::npos)
      << what;
  EXPECT_NE(what.find("4611686018427387904 x 4"), std::string::npos) << what;
}

// Each row fits in a size_t, the rows together do not: offsets into the file would wrap.
TEST_F(hdf5_test, DatasetBytesThatOverflowAreRefused) {
  auto const path = (dir_ / "huge-rows.h5").string();
  write_sparse(path, "x", H5T_STD_U8LE, {hsize_t{1} << 40, hsize_t{1} << 25}, {1, 1024});
  auto const what = file_error_of(path);
  EXPECT_NE(what.find("1099511627776 rows of 33554432 bytes"), std::string::npos) << what;
}

}  // namespace
