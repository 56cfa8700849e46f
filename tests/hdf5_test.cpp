// The HDF5 dataset: fixtures written through the HDF5 C API into a temporary directory, read back
// through hdf5_dataset (pread, inflate, unshuffle, H5Dread fallback) and through a loader.

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "gpufeed/datasets/hdf5.hpp"
#include "datasets/hdf5_filters.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace {

namespace fs = std::filesystem;
using gpufeed::dtype;
using gpufeed::hdf5_dataset;
using gpufeed::hdf5_options;
using gpufeed::hdf5_read_path;
using bytes_t = std::vector<std::byte>;

constexpr std::size_t rows = 45;  // not a multiple of chunk_rows
constexpr hsize_t chunk_rows = 8;

// How a fixture's datasets are stored.
struct storage {
  bool chunked = false;
  bool shuffle = false;
  bool deflate = false;
  bool split_rows = false;  // image chunks that split a trailing dimension (needs H5Dread)
};

// The values written: a function of (dataset, element), so any row can be recomputed.
std::uint8_t image_value(std::size_t i) {
  return static_cast<std::uint8_t>((i * 37U) % 251U);
}
std::int64_t label_value(std::size_t i) {
  return static_cast<std::int64_t>(i * 1'000'003U) - 77;
}
float x_value(std::size_t i) {
  return static_cast<float>(i) * 0.25F - 3.0F;
}
double y_value(std::size_t i) {
  return static_cast<double>(i) * 1.5e-3 + 1e10;
}

template <class T, class F>
std::vector<T> make_values(std::size_t count, F f) {
  std::vector<T> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = f(i);
  return v;
}

void check(hid_t rc, char const* what) {
  if (rc < 0) throw std::runtime_error(std::string{"fixture: "} + what);
}

// Writes `data` as dataset `name` with `dims`, stored as `how` (chunks of `chunk` rows).
void write_dataset(hid_t file, char const* name, hid_t file_type, hid_t mem_type,
                   std::vector<hsize_t> const& dims, void const* data, storage how,
                   hsize_t chunk = chunk_rows) {
  hid_t const space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t const dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (how.chunked) {
    std::vector<hsize_t> cdims = dims;
    cdims[0] = chunk;
    if (how.split_rows && cdims.size() > 1) cdims[1] = std::max<hsize_t>(1, cdims[1] / 2);
    check(H5Pset_chunk(dcpl, static_cast<int>(cdims.size()), cdims.data()), "chunk");
    if (how.shuffle) check(H5Pset_shuffle(dcpl), "shuffle");
    if (how.deflate) check(H5Pset_deflate(dcpl, 4), "deflate");
  }
  hid_t const dset = H5Dcreate2(file, name, file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  check(dset, name);
  if (data != nullptr) {
    check(H5Dwrite(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "write");
  }
  H5Dclose(dset);
  H5Pclose(dcpl);
  H5Sclose(space);
}

struct expected_data {
  std::vector<std::uint8_t> images = make_values<std::uint8_t>(rows * 8 * 8 * 3, image_value);
  std::vector<std::int64_t> labels = make_values<std::int64_t>(rows, label_value);
  std::vector<float> x = make_values<float>(rows * 5, x_value);
  std::vector<double> y = make_values<double>(rows * 2 * 3, y_value);

  // Field f's bytes of sample i, for the default field order images, labels, x, y.
  [[nodiscard]] bytes_t row(std::size_t f, std::size_t i) const {
    auto slice = [i](auto const& v, std::size_t per_row) {
      auto const* p = reinterpret_cast<std::byte const*>(v.data() + i * per_row);
      return bytes_t(p, p + per_row * sizeof(v[0]));
    };
    switch (f) {
      case 0:
        return slice(images, std::size_t{192});
      case 1:
        return slice(labels, 1);
      case 2:
        return slice(x, 5);
      default:
        return slice(y, 6);
    }
  }
};

expected_data const& expected() {
  static expected_data const data;
  return data;
}

class hdf5_test : public ::testing::Test {
 protected:
  void SetUp() override {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    std::string tmpl = (fs::temp_directory_path() / "gpufeed-hdf5-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // images u8 [N,8,8,3], labels i64 [N], x f32 [N,5], y f64 [N,2,3], all stored as `how`.
  std::string make_file(std::string const& name, storage how) {
    auto path = (dir_ / name).string();
    hid_t const file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    check(file, "create");
    auto const& e = expected();
    write_dataset(file, "images", H5T_STD_U8LE, H5T_NATIVE_UINT8, {rows, 8, 8, 3}, e.images.data(),
                  how);
    storage rest = how;
    rest.split_rows = false;
    write_dataset(file, "labels", H5T_STD_I64LE, H5T_NATIVE_INT64, {rows}, e.labels.data(), rest);
    write_dataset(file, "x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {rows, 5}, e.x.data(), rest);
    write_dataset(file, "y", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {rows, 2, 3}, e.y.data(), rest);
    H5Fclose(file);
    return path;
  }

  fs::path dir_;
};

// Reads sample `index` (at position 1 of a 3-sample slot) and returns each field's bytes.
std::vector<bytes_t> read_sample(gpufeed::dataset const& d, std::size_t index,
                                 unsigned worker = 0) {
  gpufeed::detail::slot_layout layout{d.spec(), 3};
  bytes_t slot(layout.slot_bytes(), std::byte{0xAB});
  gpufeed::read_context ctx;
  ctx.index = index;
  ctx.worker = worker;
  d.read(index, gpufeed::sample_view{layout, slot.data(), 1}, ctx);
  std::vector<bytes_t> out;
  for (std::size_t f = 0; f < layout.spec().size(); ++f) {
    auto const* at = layout.locate(slot.data(), f, 1);
    out.emplace_back(at, at + layout.field_bytes(f));
  }
  return out;
}

// Row `index` of dataset `name` through H5Dread, as the file's reference.
bytes_t direct_read(std::string const& path, char const* name, std::size_t index) {
  hid_t const file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t const dset = H5Dopen2(file, name, H5P_DEFAULT);
  hid_t const type = H5Dget_type(dset);
  hid_t const space = H5Dget_space(dset);
  std::vector<hsize_t> dims(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space)));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  std::vector<hsize_t> start(dims.size(), 0);
  std::vector<hsize_t> count = dims;
  start[0] = index;
  count[0] = 1;
  H5Sselect_hyperslab(space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
  hid_t const mem = H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr);
  std::size_t const n =
      std::accumulate(count.begin(), count.end(), std::size_t{1},
                      [](std::size_t a, hsize_t b) { return a * static_cast<std::size_t>(b); });
  bytes_t out(n * H5Tget_size(type));
  hid_t const native = H5Tget_native_type(type, H5T_DIR_ASCEND);
  EXPECT_GE(H5Dread(dset, native, mem, space, H5P_DEFAULT, out.data()), 0);
  H5Tclose(native);
  H5Sclose(mem);
  H5Sclose(space);
  H5Tclose(type);
  H5Dclose(dset);
  H5Fclose(file);
  return out;
}

void expect_all_rows(hdf5_dataset const& d, std::string const& path) {
  char const* names[] = {"images", "labels", "x", "y"};
  // A scrambled order and several workers exercise the chunk caches and their eviction.
  std::vector<std::size_t> order(rows);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937 rng{7};
  std::shuffle(order.begin(), order.end(), rng);
  for (std::size_t i : order) {
    auto const got = read_sample(d, i, static_cast<unsigned>(i % 3));
    ASSERT_EQ(got.size(), 4U);
    for (std::size_t f = 0; f < 4; ++f) {
      EXPECT_EQ(got[f], expected().row(f, i)) << "field " << names[f] << " sample " << i;
      if (i % 11 == 0) {
        EXPECT_EQ(got[f], direct_read(path, names[f], i))
            << "field " << names[f] << " sample " << i;
      }
    }
  }
}

void expect_default_spec(hdf5_dataset const& d) {
  EXPECT_EQ(d.size(), rows);
  auto const spec = d.spec();
  ASSERT_EQ(spec.size(), 4U);
  EXPECT_EQ(spec[0], (gpufeed::field{"images", dtype::u8, {8, 8, 3}}));
  EXPECT_EQ(spec[1], (gpufeed::field{"labels", dtype::i64, {}}));
  EXPECT_EQ(spec[2], (gpufeed::field{"x", dtype::f32, {5}}));
  EXPECT_EQ(spec[3], (gpufeed::field{"y", dtype::f64, {2, 3}}));
}

// Every batch's rows against the expected values of its indices; returns samples seen.
std::size_t run_loader(std::shared_ptr<hdf5_dataset const> const& d, unsigned workers,
                       std::size_t chunk_window = 0) {
  auto o = gpufeed::test::small_options(7, workers);
  o.shuffle = true;
  o.seed = 3 + workers;
  o.chunk_window = chunk_window;
  gpufeed::loader l{d, o};
  std::size_t seen = 0;
  std::set<std::size_t> indices;
  while (auto b = l.next()) {
    for (std::size_t f = 0; f < 4; ++f) {
      auto const bytes = b->field(f).as<std::byte>();
      std::size_t const row = d->spec()[f].bytes();
      for (std::size_t r = 0; r < b->size(); ++r) {
        auto const first = bytes.begin() + static_cast<std::ptrdiff_t>(r * row);
        EXPECT_EQ(bytes_t(first, first + static_cast<std::ptrdiff_t>(row)),
                  expected().row(f, b->indices()[r]))
            << "workers " << workers << " batch " << b->sequence() << " row " << r << " field "
            << f;
      }
    }
    indices.insert(b->indices().begin(), b->indices().end());
    seen += b->size();
  }
  EXPECT_EQ(indices.size(), rows);
  return seen;
}

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

// ------------------------------------------------------------------------------------------------
// The filters gpufeed undoes itself

TEST(hdf5_filters_test, UnshuffleKeepsTrailingBytes) {
  // 3 elements of 4 bytes (0x10.., 0x20.., 0x30..) plus 2 trailing bytes, shuffled as HDF5 does.
  std::vector<std::uint8_t> const plain{0x10, 0x11, 0x12, 0x13, 0x20, 0x21, 0x22,
                                        0x23, 0x30, 0x31, 0x32, 0x33, 0xA0, 0xA1};
  std::vector<std::uint8_t> const shuffled{0x10, 0x20, 0x30, 0x11, 0x21, 0x31, 0x12,
                                           0x22, 0x32, 0x13, 0x23, 0x33, 0xA0, 0xA1};
  bytes_t out(plain.size());
  gpufeed::detail::hdf5_unshuffle(std::as_bytes(std::span{shuffled}), out, 4);
  EXPECT_EQ(out, bytes_t(reinterpret_cast<std::byte const*>(plain.data()),
                         reinterpret_cast<std::byte const*>(plain.data()) + plain.size()));
}

TEST(hdf5_filters_test, InflateChecksSizeAndCorruption) {
  std::vector<std::uint8_t> plain(1000);
  for (std::size_t i = 0; i < plain.size(); ++i) plain[i] = static_cast<std::uint8_t>(i % 7);
  std::vector<std::uint8_t> packed(compressBound(plain.size()));
  auto packed_size = static_cast<uLongf>(packed.size());
  ASSERT_EQ(compress2(packed.data(), &packed_size, plain.data(), plain.size(), 6), Z_OK);
  auto const in = std::as_bytes(std::span{packed}.first(packed_size));
  std::string error;
  bytes_t exact(plain.size());
  EXPECT_EQ(gpufeed::detail::hdf5_inflate(in, exact, error), 1000);
  EXPECT_EQ(std::memcmp(exact.data(), plain.data(), plain.size()), 0);
  bytes_t small(999);
  EXPECT_EQ(gpufeed::detail::hdf5_inflate(in, small, error), -1);
  EXPECT_NE(error.find("more than"), std::string::npos) << error;
  bytes_t out(plain.size());
  EXPECT_EQ(gpufeed::detail::hdf5_inflate(in.first(in.size() / 2), out, error), -1);
  EXPECT_FALSE(error.empty());
  auto corrupt = packed;
  for (std::size_t i = 2; i < 12; ++i) corrupt[i] = 0xFF;
  EXPECT_EQ(gpufeed::detail::hdf5_inflate(std::as_bytes(std::span{corrupt}.first(packed_size)), out,
                                          error),
            -1);
}

}  // namespace
