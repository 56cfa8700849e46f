#include "gpufeed/datasets/hdf5.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/checked_math.hpp"
#include "datasets/hdf5_filters.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/log.hpp"
#include "hdf5_field.hpp"
#include "hdf5_handle.hpp"

namespace gpufeed {

namespace {

using detail::h5::dims_string;
using detail::h5::field_info;
using detail::h5::filter_kind;
using detail::h5::h5_id;
using detail::h5::no_chunk;
using detail::h5::silence;
using detail::h5::with_error;

constexpr std::size_t worker_slots = 1024;

// Buffers one worker decodes with.
struct worker_state {
  std::mutex mutex;  // uncontended unless two loaders share the dataset
  std::vector<std::byte> stored;
  std::vector<std::byte> scratch;
};

struct top_level_entry {
  std::string name;
  hsize_t rows = 0;
};

herr_t list_dataset(hid_t group, char const* name, H5L_info_t const* /*info*/,
                    void* data) noexcept {
  auto* out = static_cast<std::vector<top_level_entry>*>(data);
  h5_id obj{H5Oopen(group, name, H5P_DEFAULT), H5Oclose};
  if (!obj.valid()) {
    H5Eclear2(H5E_DEFAULT);  // a dangling link: not a dataset
    return 0;
  }
  if (H5Iget_type(obj.get()) != H5I_DATASET) return 0;
  h5_id space{H5Dget_space(obj.get()), H5Sclose};
  if (!space.valid() || H5Sget_simple_extent_ndims(space.get()) < 1) return 0;
  std::array<hsize_t, H5S_MAX_RANK> dims{};
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  try {
    out->push_back({name, dims[0]});
  } catch (...) {
    return -1;
  }
  return 0;
}

}  // namespace

struct hdf5_dataset::impl {
  std::string path;
  hdf5_options options;
  std::size_t rows = 0;
  sample_spec spec;
  h5_id file;
  int fd = -1;
  std::vector<std::unique_ptr<field_info>> fields;
  std::mutex h5_mutex;  // H5Dread fallback: one at a time
  std::array<std::atomic<worker_state*>, worker_slots> workers{};

  impl(std::string p, hdf5_options o) : path{std::move(p)}, options{std::move(o)} {}
  impl(impl const&) = delete;
  impl& operator=(impl const&) = delete;
  ~impl() {
    for (auto& w : workers) delete w.load(std::memory_order_acquire);
    if (fd >= 0) ::close(fd);
    silence();
    fields.clear();  // datasets before the file
    file.reset();
  }

  [[noreturn]] void fail(std::string const& message) const { throw file_error(path, message); }

  void open();
  std::vector<std::string> discover_fields() const;
  void add_field(std::string const& dataset_path, bool has_userblock);

  worker_state& worker(unsigned w) {
    auto& slot = workers[w % worker_slots];
    auto* state = slot.load(std::memory_order_acquire);
    if (state != nullptr) return *state;
    auto fresh = std::make_unique<worker_state>();
    worker_state* expected = nullptr;
    if (slot.compare_exchange_strong(expected, fresh.get(), std::memory_order_acq_rel)) {
      return *fresh.release();
    }
    return *expected;
  }

  void pread_exact(field_info const& f, std::size_t index, std::span<std::byte> dst,
                   std::uint64_t offset, std::size_t chunk = no_chunk) const;
  void read_h5(field_info const& f, std::size_t index, std::span<std::byte> dst);
  void read_chunked(field_info& f, std::size_t index, std::span<std::byte> dst, unsigned worker_id);
  void decode_chunk(field_info const& f, std::size_t index, std::size_t k, worker_state& w,
                    std::vector<std::byte>& decoded) const;
};

void hdf5_dataset::impl::open() {
  GPUFEED_EXPECTS(options.cache_chunks >= 1,
                  "hdf5_options::cache_chunks must be at least 1 (got 0)");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int const err = errno;
    fail("cannot open: " + std::generic_category().message(err));
  }
  if (!S_ISREG(st.st_mode)) fail("not a regular file");
  silence();
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    fail("not an HDF5 file (no HDF5 signature found)");
  }
  file = h5_id{H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  if (!file.valid()) fail(with_error("cannot open as HDF5 (truncated or malformed?)"));
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int const err = errno;
    fail("cannot open: " + std::generic_category().message(err));
  }

  hsize_t userblock = 0;
  {
    h5_id fcpl{H5Fget_create_plist(file.get()), H5Pclose};
    if (!fcpl.valid() || H5Pget_userblock(fcpl.get(), &userblock) < 0) {
      fail(with_error("cannot read the file creation properties"));
    }
  }

  auto names = options.fields.empty() ? discover_fields() : options.fields;
  for (auto const& name : names) add_field(name, userblock != 0);

  for (auto const& f : fields) {
    if (f->path != hdf5_read_path::h5dread) continue;
    if (options.force_h5dread) {
      logger()->info("hdf5 {}: field '{}' reads through H5Dread (serialized): {}", path, f->name,
                     f->reason);
    } else {
      logger()->warn("hdf5 {}: field '{}' reads through H5Dread (serialized on one lock): {}", path,
                     f->name, f->reason);
    }
  }
}

std::vector<std::string> hdf5_dataset::impl::discover_fields() const {
  std::vector<top_level_entry> entries;
  hsize_t at = 0;
  if (H5Literate(file.get(), H5_INDEX_NAME, H5_ITER_INC, &at, list_dataset, &entries) < 0) {
    fail(with_error("cannot list the top-level datasets"));
  }
  std::sort(entries.begin(), entries.end(),
            [](auto const& a, auto const& b) { return a.name < b.name; });
  std::map<hsize_t, std::size_t> count;
  for (auto const& e : entries) ++count[e.rows];
  // The sample count: the first dimension most datasets share; on a tie, the first by name.
  std::optional<hsize_t> sample_rows;
  std::size_t best = 0;
  for (auto const& e : entries) {
    if (count[e.rows] > best) {
      best = count[e.rows];
      sample_rows = e.rows;
    }
  }
  if (!sample_rows) fail("no top-level dataset with at least one dimension (name the fields)");
  std::vector<std::string> names;
  for (auto const& e : entries) {
    if (e.rows == *sample_rows) names.push_back(e.name);
  }
  return names;
}

void hdf5_dataset::impl::add_field(std::string const& dataset_path, bool has_userblock) {
  auto f = std::make_unique<field_info>();
  f->dataset = dataset_path;
  f->name = dataset_path.starts_with('/') ? dataset_path.substr(1) : dataset_path;
  f->dset = h5_id{H5Dopen2(file.get(), dataset_path.c_str(), H5P_DEFAULT), H5Dclose};
  if (!f->dset.valid()) fail(with_error("no dataset '" + dataset_path + "'"));

  h5_id space{H5Dget_space(f->dset.get()), H5Sclose};
  int const rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 0) fail(with_error("cannot read the shape of dataset '" + dataset_path + "'"));
  if (rank == 0) {
    fail("dataset '" + dataset_path +
         "' is a scalar; a field needs a first dimension (the sample axis)");
  }
  f->dims.resize(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), f->dims.data(), nullptr);

  h5_id type{H5Dget_type(f->dset.get()), H5Tclose};
  if (!type.valid()) fail(with_error("cannot read the type of dataset '" + dataset_path + "'"));
  auto const mapped = detail::h5::map_type(type.get());
  if (!mapped) {
    fail("dataset '" + dataset_path + "' has type " + detail::h5::describe_type(type.get()) +
         ", which has no gpufeed dtype (supported: uint8, int8, uint16, int16, int32, int64, "
         "float16, bfloat16, float32, float64)");
  }
  f->type = *mapped;
  f->element_bytes = size_of(f->type);
  bool const big_endian = f->element_bytes > 1 && H5Tget_order(type.get()) == H5T_ORDER_BE;
  f->mem_type = h5_id{H5Tcopy(type.get()), H5Tclose};
  if (!f->mem_type.valid() ||
      (f->element_bytes > 1 && H5Tset_order(f->mem_type.get(), H5T_ORDER_LE) < 0)) {
    fail(with_error("cannot make a memory type for dataset '" + dataset_path + "'"));
  }

  if (fields.empty()) {
    rows = static_cast<std::size_t>(f->dims[0]);
  } else if (f->dims[0] != rows) {
    fail("dataset '" + fields.front()->dataset + "' has " + std::to_string(rows) +
         " rows but dataset '" + dataset_path + "' has " + std::to_string(f->dims[0]) +
         "; every field needs the same first dimension (the sample count)");
  }

  // The row's size comes from the file: every product is checked (by sample_spec), so that a file
  // that declares huge dimensions is refused here instead of wrapping to a small row.
  std::vector<std::int64_t> shape;
  for (std::size_t d = 1; d < f->dims.size(); ++d) {
    if (f->dims[d] > static_cast<hsize_t>(std::numeric_limits<std::int64_t>::max())) {
      fail("dataset '" + dataset_path + "' " + dims_string(f->dims) + " has dimension " +
           std::to_string(f->dims[d]) + ", more than a field's shape holds");
    }
    shape.push_back(static_cast<std::int64_t>(f->dims[d]));
  }
  try {
    spec.add(f->name, f->type, std::move(shape));
  } catch (logic_error const& e) {
    fail("dataset '" + dataset_path + "' " + dims_string(f->dims) +
         " cannot be a field: " + e.what());
  }
  f->row_bytes = spec[spec.size() - 1].bytes();  // checked by spec.add
  if (!detail::try_mul(rows, f->row_bytes)) {
    fail("dataset '" + dataset_path + "' " + dims_string(f->dims) + " holds " +
         std::to_string(rows) + " rows of " + std::to_string(f->row_bytes) +
         " bytes: more bytes than a 64-bit size counts");
  }

  if (options.force_h5dread) {
    f->path = hdf5_read_path::h5dread;
    f->reason = "hdf5_options::force_h5dread";
    detail::h5::learn_chunk_rows(*f);  // for storage_chunk()
  } else {
    if (big_endian) {
      f->path = hdf5_read_path::h5dread;
      f->reason = "stored big-endian (H5Dread converts it)";
    }
    detail::h5::choose_read_path(*f, rows, has_userblock || big_endian, path);
    if (has_userblock && f->reason.empty()) {
      f->path = hdf5_read_path::h5dread;
      f->reason = "the file has a user block";
    }
  }
  // Checked once here, so that chunk_bytes() needs no check where chunks are read.
  if (f->chunk_rows > 0 && !detail::try_mul(f->chunk_rows, f->row_bytes)) {
    fail("dataset '" + dataset_path + "' " + dims_string(f->dims) + " has chunks of " +
         std::to_string(f->chunk_rows) + " rows of " + std::to_string(f->row_bytes) +
         " bytes: more bytes than a 64-bit size counts");
  }
  fields.push_back(std::move(f));
}

void hdf5_dataset::impl::pread_exact(field_info const& f, std::size_t index,
                                     std::span<std::byte> dst, std::uint64_t offset,
                                     std::size_t chunk) const {
  auto const what = [&] {
    return "field '" + f.name + "', sample " + std::to_string(index) +
           (chunk == no_chunk ? std::string{} : " (chunk " + std::to_string(chunk) + ")");
  };
  std::size_t done = 0;
  while (done < dst.size()) {
    auto const at = static_cast<off_t>(offset + done);
    ssize_t const got = ::pread(fd, dst.data() + done, dst.size() - done, at);
    if (got < 0) {
      int const err = errno;  // before anything else can change it
      if (err == EINTR) continue;
      fail(what() + ": read of " + std::to_string(dst.size()) + " bytes at offset " +
           std::to_string(offset) + " failed: " + std::generic_category().message(err));
    }
    if (got == 0) {
      struct stat st {};
      std::string const size =
          ::fstat(fd, &st) == 0 ? std::to_string(st.st_size) : std::string{"?"};
      fail("truncated file: " + what() + " needs bytes [" + std::to_string(offset) + ", " +
           std::to_string(offset + dst.size()) + ") but the file has " + size + " bytes");
    }
    done += static_cast<std::size_t>(got);
  }
}

void hdf5_dataset::impl::read_h5(field_info const& f, std::size_t index, std::span<std::byte> dst) {
  std::lock_guard lock{h5_mutex};
  silence();
  std::vector<hsize_t> start(f.dims.size(), 0);
  std::vector<hsize_t> count = f.dims;
  start[0] = static_cast<hsize_t>(index);
  count[0] = 1;
  h5_id fspace{H5Dget_space(f.dset.get()), H5Sclose};
  h5_id mspace{H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose};
  if (!fspace.valid() || !mspace.valid() ||
      H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                          nullptr) < 0 ||
      H5Dread(f.dset.get(), f.mem_type.get(), mspace.get(), fspace.get(), H5P_DEFAULT, dst.data()) <
          0) {
    fail(with_error("H5Dread of field '" + f.name + "', sample " + std::to_string(index) +
                    " failed"));
  }
}

void hdf5_dataset::impl::decode_chunk(field_info const& f, std::size_t index, std::size_t k,
                                      worker_state& w, std::vector<std::byte>& decoded) const {
  auto const& ch = f.chunks[k];
  auto const chunk_bytes = f.chunk_bytes();
  auto const where = [&] {
    return "field '" + f.name + "', sample " + std::to_string(index) + ": chunk " +
           std::to_string(k) + " (samples " + std::to_string(k * f.chunk_rows) + ".." +
           std::to_string(std::min(rows, (k + 1) * f.chunk_rows) - 1) + ", " +
           std::to_string(ch.stored) + " bytes at offset " + std::to_string(ch.address) + ")";
  };
  w.stored.resize(static_cast<std::size_t>(ch.stored));
  pread_exact(f, index, w.stored, ch.address, k);
  std::vector<std::size_t> steps;  // pipeline positions to undo, last applied first
  for (std::size_t j = f.filters.size(); j-- > 0;) {
    if ((ch.mask & (1U << j)) == 0) steps.push_back(j);
  }
  w.scratch.resize(chunk_bytes);
  decoded.resize(chunk_bytes);
  std::span<std::byte const> in = w.stored;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    // Alternate so that the last step writes into the cache entry.
    std::span<std::byte> out = ((steps.size() - 1 - s) % 2 == 0) ? std::span<std::byte>{decoded}
                                                                 : std::span<std::byte>{w.scratch};
    if (f.filters[steps[s]] == filter_kind::deflate) {
      std::string error;
      auto const n = detail::hdf5_inflate(in, out, error);
      if (n < 0) fail(where() + ": " + error);
      in = out.first(static_cast<std::size_t>(n));
    } else {
      if (in.size() > out.size()) {
        fail(where() + ": shuffled data is larger than the chunk's " + std::to_string(chunk_bytes) +
             " bytes");
      }
      detail::hdf5_unshuffle(in, out.first(in.size()), f.element_bytes);
      in = out.first(in.size());
    }
  }
  if (in.size() != chunk_bytes) {
    fail(where() + ": decodes to " + std::to_string(in.size()) + " bytes, expected " +
         std::to_string(chunk_bytes));
  }
}

void hdf5_dataset::impl::read_chunked(field_info& f, std::size_t index, std::span<std::byte> dst,
                                      unsigned worker_id) {
  std::size_t const k = index / f.chunk_rows;
  std::size_t const row = index % f.chunk_rows;
  auto const& ch = f.chunks[k];
  if (ch.stored == 0) {
    if (!f.missing_chunk_logged.exchange(true, std::memory_order_relaxed)) {
      logger()->warn(
          "hdf5 {}: field '{}' has chunks that were never written (chunk {}): those read through "
          "H5Dread (fill value)",
          path, f.name, k);
    }
    read_h5(f, index, dst);
    return;
  }
  bool filtered = false;
  for (std::size_t j = 0; j < f.filters.size(); ++j) {
    if ((ch.mask & (1U << j)) == 0) filtered = true;
  }
  if (!filtered) {
    if (ch.stored < f.chunk_bytes()) {
      fail("field '" + f.name + "', sample " + std::to_string(index) + ": chunk " +
           std::to_string(k) + " at offset " + std::to_string(ch.address) + " holds " +
           std::to_string(ch.stored) + " bytes, less than the chunk's " +
           std::to_string(f.chunk_bytes()));
    }
    pread_exact(f, index, dst, ch.address + row * f.row_bytes, k);
    return;
  }
  auto [data, decode, failed] = f.cache.find_or_claim(k, options.cache_chunks);
  if (!decode) {
    if (!failed.empty()) fail(failed);
  } else {
    std::string error;
    try {
      auto& w = worker(worker_id);
      std::lock_guard worker_lock{w.mutex};
      decode_chunk(f, index, k, w, data->bytes);
    } catch (file_error const& e) {
      error = e.what();
      if (error.starts_with(path + ": ")) error.erase(0, path.size() + 2);
    } catch (std::exception const& e) {
      error = "field '" + f.name + "', chunk " + std::to_string(k) + ": " + e.what();
    }
    f.cache.decoded(data, error);
    if (!error.empty()) fail(error);
  }
  std::memcpy(dst.data(), data->bytes.data() + row * f.row_bytes, f.row_bytes);
}

// ------------------------------------------------------------------------------------------------

hdf5_dataset::hdf5_dataset(std::string path, hdf5_options options)
    : impl_{std::make_unique<impl>(std::move(path), std::move(options))} {
  impl_->open();
}

hdf5_dataset::~hdf5_dataset() = default;

std::size_t hdf5_dataset::size() const {
  return impl_->rows;
}

sample_spec hdf5_dataset::spec() const {
  return impl_->spec;
}

void hdf5_dataset::read(std::size_t index, sample_view out, read_context const& ctx) const {
  GPUFEED_EXPECTS(index < impl_->rows, "hdf5_dataset::read: index " + std::to_string(index) +
                                           " is past the end (" + std::to_string(impl_->rows) +
                                           " samples)");
  for (std::size_t fi = 0; fi < impl_->fields.size(); ++fi) {
    auto& f = *impl_->fields[fi];
    auto const dst = out.bytes(fi);
    switch (f.path) {
      case hdf5_read_path::contiguous:
        impl_->pread_exact(f, index, dst, f.offset + index * f.row_bytes);
        break;
      case hdf5_read_path::chunked:
        impl_->read_chunked(f, index, dst, ctx.worker);
        break;
      case hdf5_read_path::h5dread:
        impl_->read_h5(f, index, dst);
        break;
    }
  }
}

std::size_t hdf5_dataset::storage_chunk() const {
  std::size_t best_bytes = 0;
  std::size_t rows = 0;
  for (auto const& f : impl_->fields) {
    if (f->chunk_rows > 0 && f->chunk_bytes() > best_bytes) {
      best_bytes = f->chunk_bytes();
      rows = f->chunk_rows;
    }
  }
  return rows;
}

std::string const& hdf5_dataset::path() const noexcept {
  return impl_->path;
}

hdf5_read_path hdf5_dataset::read_path(std::size_t f) const {
  GPUFEED_EXPECTS(f < impl_->fields.size(), "hdf5_dataset::read_path: field " + std::to_string(f) +
                                                " of " + std::to_string(impl_->fields.size()));
  return impl_->fields[f]->path;
}

std::string_view hdf5_dataset::fallback_reason(std::size_t f) const {
  GPUFEED_EXPECTS(f < impl_->fields.size(), "hdf5_dataset::fallback_reason: field " +
                                                std::to_string(f) + " of " +
                                                std::to_string(impl_->fields.size()));
  return impl_->fields[f]->reason;
}

}  // namespace gpufeed
