// The HDF5 dataset: fixtures written through the HDF5 C API, read back through hdf5_dataset
// (pread, inflate, unshuffle) and through loaders.

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

#include "gpufeed/datasets/hdf5.hpp"
#include "gpufeed/gpufeed.hpp"
#include "support/hdf5_files.hpp"

namespace {

using namespace gpufeed::test::hdf5_files;  // NOLINT(google-build-using-namespace): fixtures

// ------------------------------------------------------------------------------------------------
// Content

TEST_F(hdf5_test, ContiguousReadsByOffset) {
  auto const path = make_file("contiguous.h5", {});
  hdf5_dataset d{path};
  expect_default_spec(d);
  for (std::size_t f = 0; f < 4; ++f) EXPECT_EQ(d.read_path(f), hdf5_read_path::contiguous);
  EXPECT_EQ(d.storage_chunk(), 0U);
  EXPECT_EQ(d.path(), path);
  expect_all_rows(d, path);
}

TEST_F(hdf5_test, ChunkedUncompressed) {
  auto const path = make_file("chunked.h5", {.chunked = true});
  hdf5_dataset d{path};
  expect_default_spec(d);
  for (std::size_t f = 0; f < 4; ++f) EXPECT_EQ(d.read_path(f), hdf5_read_path::chunked);
  EXPECT_EQ(d.storage_chunk(), chunk_rows);
  expect_all_rows(d, path);
}

TEST_F(hdf5_test, ChunkedDeflate) {
  auto const path = make_file("deflate.h5", {.chunked = true, .deflate = true});
  hdf5_dataset d{path, hdf5_options{.cache_chunks = 2}};
  expect_default_spec(d);
  for (std::size_t f = 0; f < 4; ++f) EXPECT_EQ(d.read_path(f), hdf5_read_path::chunked);
  EXPECT_EQ(d.storage_chunk(), chunk_rows);
  expect_all_rows(d, path);
}

TEST_F(hdf5_test, ChunkedShuffleDeflate) {
  auto const path = make_file("shuffle.h5", {.chunked = true, .shuffle = true, .deflate = true});
  hdf5_dataset d{path, hdf5_options{.cache_chunks = 1}};
  expect_default_spec(d);
  for (std::size_t f = 0; f < 4; ++f) EXPECT_EQ(d.read_path(f), hdf5_read_path::chunked);
  expect_all_rows(d, path);
}

TEST_F(hdf5_test, ChunkedShuffleOnly) {
  auto const path = make_file("shuffle-only.h5", {.chunked = true, .shuffle = true});
  hdf5_dataset d{path};
  expect_all_rows(d, path);
}

TEST_F(hdf5_test, NamedFieldsInTheirOrder) {
  auto const path = make_file("named.h5", {.chunked = true, .deflate = true});
  hdf5_dataset d{path, hdf5_options{.fields = {"/labels", "images"}}};
  auto const spec = d.spec();
  ASSERT_EQ(spec.size(), 2U);
  EXPECT_EQ(spec[0].name, "labels");
  EXPECT_EQ(spec[1].name, "images");
  for (std::size_t i = 0; i < rows; i += 5) {
    auto const got = read_sample(d, i);
    EXPECT_EQ(got[0], expected().row(1, i));
    EXPECT_EQ(got[1], expected().row(0, i));
  }
}

TEST_F(hdf5_test, DefaultFieldsAreThoseOfTheSampleCount) {
  auto const path = make_file("extra.h5", {});
  hid_t const file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  std::vector<std::int32_t> meta{1, 2, 3};
  write_dataset(file, "meta", H5T_STD_I32LE, H5T_NATIVE_INT32, {3}, meta.data(), {});
  H5Gclose(H5Gcreate2(file, "group", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Fclose(file);
  hdf5_dataset d{path};
  expect_default_spec(d);  // meta (3 rows) and the group are left out
}

// ------------------------------------------------------------------------------------------------
// Through the loader

TEST_F(hdf5_test, LoaderWithWorkersAndShuffle) {
  auto const contiguous = std::make_shared<hdf5_dataset const>(make_file("c.h5", {}));
  auto const chunked = std::make_shared<hdf5_dataset const>(
      make_file("z.h5", {.chunked = true, .shuffle = true, .deflate = true}));
  // One cached chunk for 8 workers: entries are evicted and decoded concurrently.
  auto const tiny_cache = std::make_shared<hdf5_dataset const>(
      make_file("t.h5", {.chunked = true, .deflate = true}), hdf5_options{.cache_chunks = 1});
  for (unsigned workers : {1U, 2U, 3U, 8U}) {
    EXPECT_EQ(run_loader(contiguous, workers), rows);
    EXPECT_EQ(run_loader(chunked, workers), rows);
    EXPECT_EQ(run_loader(tiny_cache, workers), rows);
  }
}

TEST_F(hdf5_test, LoaderWithChunkAwareShuffle) {
  auto const chunked = std::make_shared<hdf5_dataset const>(
      make_file("z.h5", {.chunked = true, .deflate = true}), hdf5_options{.cache_chunks = 2});
  EXPECT_EQ(run_loader(chunked, 4, 2), rows);
}

TEST_F(hdf5_test, TwoLoadersShareOneDataset) {
  // Their workers have the same ids: the per-worker state must still be safe.
  auto const d = std::make_shared<hdf5_dataset const>(
      make_file("shared.h5", {.chunked = true, .shuffle = true, .deflate = true}),
      hdf5_options{.cache_chunks = 2});
  std::size_t seen_a = 0;
  std::size_t seen_b = 0;
  std::thread a{[&] { seen_a = run_loader(d, 3); }};
  std::thread b{[&] { seen_b = run_loader(d, 4); }};
  a.join();
  b.join();
  EXPECT_EQ(seen_a, rows);
  EXPECT_EQ(seen_b, rows);
}

}  // namespace
