// The HDF5 dataset's H5Dread fallback: forced, chunks that split rows, chunks never written, huge
// chunk counts, and the types it converts (big-endian, half floats, narrow integers).

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "gpufeed/datasets/hdf5.hpp"
#include "gpufeed/gpufeed.hpp"
#include "support/hdf5_files.hpp"

namespace {

using namespace gpufeed::test::hdf5_files;  // NOLINT(google-build-using-namespace): fixtures

// ------------------------------------------------------------------------------------------------
// The H5Dread fallback

TEST_F(hdf5_test, ForcedH5DreadGivesTheSameContent) {
  auto const path = make_file("forced.h5", {.chunked = true, .shuffle = true, .deflate = true});
  auto const d = std::make_shared<hdf5_dataset const>(path, hdf5_options{.force_h5dread = true});
  for (std::size_t f = 0; f < 4; ++f) {
    EXPECT_EQ(d->read_path(f), hdf5_read_path::h5dread);
    EXPECT_FALSE(d->fallback_reason(f).empty());
  }
  EXPECT_EQ(d->storage_chunk(), chunk_rows);
  expect_all_rows(*d, path);
  EXPECT_EQ(run_loader(d, 4), rows);
}

TEST_F(hdf5_test, ChunksThatSplitRowsFallBack) {
  auto const path = make_file(
      "split.h5", {.chunked = true, .shuffle = true, .deflate = true, .split_rows = true});
  hdf5_dataset d{path};
  EXPECT_EQ(d.read_path(0), hdf5_read_path::h5dread);
  EXPECT_NE(d.fallback_reason(0).find("split"), std::string_view::npos) << d.fallback_reason(0);
  EXPECT_EQ(d.read_path(1), hdf5_read_path::chunked);
  expect_all_rows(d, path);
}

TEST_F(hdf5_test, ChunksNeverWrittenReadAsFillValue) {
  auto const path = (dir_ / "sparse.h5").string();
  hid_t const file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  write_dataset(file, "labels", H5T_STD_I64LE, H5T_NATIVE_INT64, {rows}, nullptr,
                {.chunked = true, .deflate = true});
  // Only the first two chunks are written.
  hid_t const dset = H5Dopen2(file, "labels", H5P_DEFAULT);
  hid_t const space = H5Dget_space(dset);
  hsize_t const start = 0;
  hsize_t const count = 2 * chunk_rows;
  H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, nullptr, &count, nullptr);
  hid_t const mem = H5Screate_simple(1, &count, nullptr);
  ASSERT_GE(H5Dwrite(dset, H5T_NATIVE_INT64, mem, space, H5P_DEFAULT, expected().labels.data()), 0);
  H5Sclose(mem);
  H5Sclose(space);
  H5Dclose(dset);
  H5Fclose(file);

  hdf5_dataset d{path};
  EXPECT_EQ(d.read_path(0), hdf5_read_path::chunked);
  for (std::size_t i = 0; i < rows; ++i) {
    auto const got = read_sample(d, i);
    auto const want = i < count ? expected().row(1, i) : bytes_t(8, std::byte{0});
    EXPECT_EQ(got[0], want) << "sample " << i;
  }
}

// Found by hdf5_open_fuzz: a file whose metadata claims an enormous number of chunks made the
// open allocate one index entry per chunk without limit. Such a file (here a legal, sparse one)
// now falls back to H5Dread, which reads never-written chunks as the fill value.
TEST_F(hdf5_test, HugeChunkCountFallsBackInsteadOfIndexing) {
  auto const path = (dir_ / "huge.h5").string();
  hid_t const file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t const huge_rows = hsize_t{1} << 40;
  hsize_t const one_row = 1;
  hid_t const space = H5Screate_simple(1, &huge_rows, nullptr);
  hid_t const plist = H5Pcreate(H5P_DATASET_CREATE);
  ASSERT_GE(H5Pset_chunk(plist, 1, &one_row), 0);
  hid_t const dset =
      H5Dcreate2(file, "labels", H5T_STD_I64LE, space, H5P_DEFAULT, plist, H5P_DEFAULT);
  ASSERT_GE(dset, 0);
  H5Dclose(dset);
  H5Pclose(plist);
  H5Sclose(space);
  H5Fclose(file);

  hdf5_dataset d{path};
  EXPECT_EQ(d.size(), std::size_t{1} << 40);
  EXPECT_EQ(d.read_path(0), hdf5_read_path::h5dread);
  EXPECT_NE(d.fallback_reason(0).find("chunks"), std::string_view::npos) << d.fallback_reason(0);
  EXPECT_EQ(read_sample(d, 12345)[0], bytes_t(8, std::byte{0}));
}

// ------------------------------------------------------------------------------------------------
// Types it converts

TEST_F(hdf5_test, BigEndianIsConverted) {
  auto const path = (dir_ / "be.h5").string();
  hid_t const file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  write_dataset(file, "labels", H5T_STD_I64BE, H5T_NATIVE_INT64, {rows}, expected().labels.data(),
                {});
  H5Fclose(file);
  hdf5_dataset d{path};
  EXPECT_EQ(d.read_path(0), hdf5_read_path::h5dread);
  for (std::size_t i = 0; i < rows; ++i) EXPECT_EQ(read_sample(d, i)[0], expected().row(1, i));
}

TEST_F(hdf5_test, HalfFloatsMapToF16) {
  auto const path = (dir_ / "half.h5").string();
  hid_t const half = H5Tcopy(H5T_IEEE_F32LE);
  check(H5Tset_fields(half, 15, 10, 5, 0, 10), "fields");
  check(H5Tset_precision(half, 16), "precision");
  check(H5Tset_size(half, 2), "size");
  check(H5Tset_ebias(half, 15), "ebias");
  std::vector<std::uint16_t> bits(rows * 2);
  for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<std::uint16_t>(0x3c00U + i);
  hid_t const file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  write_dataset(file, "h", half, half, {rows, 2}, bits.data(), {.chunked = true, .shuffle = true});
  H5Fclose(file);
  H5Tclose(half);
  hdf5_dataset d{path};
  EXPECT_EQ(d.spec()[0], (gpufeed::field{"h", dtype::f16, {2}}));
  for (std::size_t i = 0; i < rows; ++i) {
    auto const got = read_sample(d, i)[0];
    auto const* want = reinterpret_cast<std::byte const*>(bits.data() + 2 * i);
    EXPECT_EQ(got, bytes_t(want, want + 4)) << "sample " << i;
  }
}

TEST_F(hdf5_test, IntegerTypesMap) {
  auto const path = (dir_ / "ints.h5").string();
  hid_t const file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  std::vector<std::int64_t> values(rows);
  std::iota(values.begin(), values.end(), std::int64_t{-20});
  // HDF5 converts the int64 values to each file type on write.
  write_dataset(file, "a_i8", H5T_STD_I8LE, H5T_NATIVE_INT64, {rows}, values.data(), {});
  write_dataset(file, "b_i16", H5T_STD_I16LE, H5T_NATIVE_INT64, {rows}, values.data(),
                {.chunked = true, .shuffle = true, .deflate = true});
  write_dataset(file, "c_i32", H5T_STD_I32LE, H5T_NATIVE_INT64, {rows}, values.data(),
                {.chunked = true});
  std::vector<std::int64_t> positive(rows);
  std::iota(positive.begin(), positive.end(), std::int64_t{1000});
  write_dataset(file, "d_u16", H5T_STD_U16LE, H5T_NATIVE_INT64, {rows}, positive.data(), {});
  H5Fclose(file);
  hdf5_dataset d{path};
  auto const spec = d.spec();
  ASSERT_EQ(spec.size(), 4U);
  EXPECT_EQ(spec[0].type, dtype::i8);
  EXPECT_EQ(spec[1].type, dtype::i16);
  EXPECT_EQ(spec[2].type, dtype::i32);
  EXPECT_EQ(spec[3].type, dtype::u16);
  for (std::size_t i = 0; i < rows; ++i) {
    auto const got = read_sample(d, i);
    std::int8_t a = 0;
    std::int16_t b = 0;
    std::int32_t c = 0;
    std::uint16_t u = 0;
    std::memcpy(&a, got[0].data(), 1);
    std::memcpy(&b, got[1].data(), 2);
    std::memcpy(&c, got[2].data(), 4);
    std::memcpy(&u, got[3].data(), 2);
    EXPECT_EQ(a, values[i]);
    EXPECT_EQ(b, values[i]);
    EXPECT_EQ(c, values[i]);
    EXPECT_EQ(u, positive[i]);
  }
}

}  // namespace
