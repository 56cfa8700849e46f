#pragma once
// The HDF5 suites' fixtures: files written through the HDF5 C API into a temporary directory (the
// hdf5_test fixture), the values they hold, and readers that check what hdf5_dataset gives back.

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "gpufeed/datasets/hdf5.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/gpufeed.hpp"
#include "test_datasets.hpp"

namespace gpufeed::test::hdf5_files {

namespace fs = std::filesystem;
using gpufeed::dtype;
using gpufeed::hdf5_dataset;
using gpufeed::hdf5_options;
using gpufeed::hdf5_read_path;
using bytes_t = std::vector<std::byte>;

inline constexpr std::size_t rows = 45;  // not a multiple of chunk_rows
inline constexpr hsize_t chunk_rows = 8;

// How a fixture's datasets are stored.
struct storage {
  bool chunked = false;
  bool shuffle = false;
  bool deflate = false;
  bool split_rows = false;  // image chunks that split a trailing dimension (needs H5Dread)
};

// The values written: a function of (dataset, element), so any row can be recomputed.
inline std::uint8_t image_value(std::size_t i) {
  return static_cast<std::uint8_t>((i * 37U) % 251U);
}
inline std::int64_t label_value(std::size_t i) {
  return static_cast<std::int64_t>(i * 1'000'003U) - 77;
}
inline float x_value(std::size_t i) {
  return static_cast<float>(i) * 0.25F - 3.0F;
}
inline double y_value(std::size_t i) {
  return static_cast<double>(i) * 1.5e-3 + 1e10;
}

template <class T, class F>
std::vector<T> make_values(std::size_t count, F f) {
  std::vector<T> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = f(i);
  return v;
}

inline void check(hid_t rc, char const* what) {
  if (rc < 0) throw std::runtime_error(std::string{"fixture: "} + what);
}

// Writes `data` as dataset `name` with `dims`, stored as `how` (chunks of `chunk` rows).
inline void write_dataset(hid_t file, char const* name, hid_t file_type, hid_t mem_type,
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

inline expected_data const& expected() {
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
inline std::vector<bytes_t> read_sample(gpufeed::dataset const& d, std::size_t index,
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
inline bytes_t direct_read(std::string const& path, char const* name, std::size_t index) {
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

inline void expect_all_rows(hdf5_dataset const& d, std::string const& path) {
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

inline void expect_default_spec(hdf5_dataset const& d) {
  EXPECT_EQ(d.size(), rows);
  auto const spec = d.spec();
  ASSERT_EQ(spec.size(), 4U);
  EXPECT_EQ(spec[0], (gpufeed::field{"images", dtype::u8, {8, 8, 3}}));
  EXPECT_EQ(spec[1], (gpufeed::field{"labels", dtype::i64, {}}));
  EXPECT_EQ(spec[2], (gpufeed::field{"x", dtype::f32, {5}}));
  EXPECT_EQ(spec[3], (gpufeed::field{"y", dtype::f64, {2, 3}}));
}

// Every batch's rows against the expected values of its indices; returns samples seen.
inline std::size_t run_loader(std::shared_ptr<hdf5_dataset const> const& d, unsigned workers,
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

}  // namespace gpufeed::test::hdf5_files
