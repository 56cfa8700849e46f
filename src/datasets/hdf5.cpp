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

#include "gpufeed/detail/checked_math.hpp"
#include "gpufeed/detail/hdf5_filters.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/log.hpp"

namespace gpufeed {

namespace {

constexpr std::size_t worker_slots = 1024;
constexpr std::size_t no_chunk = std::numeric_limits<std::size_t>::max();

// The thread-safe build keeps one error stack per thread: silence it on every thread that calls
// HDF5, so failures become exceptions and nothing is printed to stderr.
void silence_hdf5() noexcept {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

herr_t collect_error(unsigned /*n*/, H5E_error2_t const* e, void* data) noexcept {
  auto* out = static_cast<std::vector<std::string>*>(data);
  if (e != nullptr && e->desc != nullptr && *e->desc != '\0') {
    out->emplace_back(e->desc);
  }
  return 0;
}

// `what`, followed by the outermost and the innermost message of this thread's HDF5 error stack.
std::string with_hdf5_error(std::string what) {
  std::vector<std::string> messages;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &messages);
  H5Eclear2(H5E_DEFAULT);
  if (!messages.empty()) {
    what += " (HDF5: " + messages.front();
    if (messages.size() > 1) what += ": " + messages.back();
    what += ")";
  }
  return what;
}

// An HDF5 identifier closed by its own close function.
class h5_id {
 public:
  h5_id() = default;
  h5_id(hid_t id, herr_t (*close)(hid_t)) noexcept : id_{id}, close_{close} {}
  h5_id(h5_id&& other) noexcept
      : id_{std::exchange(other.id_, H5I_INVALID_HID)}, close_{other.close_} {}
  h5_id& operator=(h5_id&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      close_ = other.close_;
    }
    return *this;
  }
  h5_id(h5_id const&) = delete;
  h5_id& operator=(h5_id const&) = delete;
  ~h5_id() { reset(); }
  [[nodiscard]] hid_t get() const noexcept { return id_; }
  [[nodiscard]] bool valid() const noexcept { return id_ >= 0; }
  void reset() noexcept {
    if (id_ >= 0 && close_ != nullptr) close_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
};

enum class filter_kind : std::uint8_t { deflate, shuffle };

struct chunk_ref {
  std::uint64_t address = 0;
  std::uint64_t stored = 0;  // 0: never written (reads give the fill value, through H5Dread)
  unsigned mask = 0;         // bit j set: filter j of the pipeline was not applied to this chunk
};

struct decoded_chunk {
  std::vector<std::byte> bytes;  // written by its decoder alone, read once `ready`
  bool ready = false;
  std::string error;  // set instead of `ready` when decoding failed
};

struct cache_entry {
  std::size_t chunk = no_chunk;
  std::uint64_t used = 0;
  std::shared_ptr<decoded_chunk> data;  // readers hold a reference while they copy
};

// One field's decoded chunks. The first worker that needs a chunk decodes it, outside the lock;
// workers that need it meanwhile wait for it instead of decoding it again. A chunk is therefore
// decompressed once per stay in the cache, whatever the number of workers.
struct chunk_cache {
  std::mutex mutex;
  std::condition_variable decoded;
  std::vector<cache_entry> entries;
  std::uint64_t tick = 0;
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

// Buffers one worker decodes with.
struct worker_state {
  std::mutex mutex;  // uncontended unless two loaders share the dataset
  std::vector<std::byte> stored;
  std::vector<std::byte> scratch;
};

std::string describe_type(hid_t type) {
  auto const size = H5Tget_size(type);
  std::string const bits = std::to_string(size * 8) + "-bit ";
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return bits + (H5Tget_sign(type) == H5T_SGN_NONE ? "unsigned integer" : "signed integer");
    case H5T_FLOAT:
      return bits + "float";
    case H5T_STRING:
      return "string";
    case H5T_BITFIELD:
      return bits + "bitfield";
    case H5T_OPAQUE:
      return "opaque";
    case H5T_COMPOUND:
      return "compound";
    case H5T_REFERENCE:
      return "reference";
    case H5T_ENUM:
      return bits + "enum";
    case H5T_VLEN:
      return "variable-length";
    case H5T_ARRAY:
      return "array";
    default:
      return "unknown";
  }
}

std::optional<dtype> map_type(hid_t type) {
  auto const size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: {
      bool const is_signed = H5Tget_sign(type) != H5T_SGN_NONE;
      switch (size) {
        case 1:
          return is_signed ? dtype::i8 : dtype::u8;
        case 2:
          return is_signed ? dtype::i16 : dtype::u16;
        case 4:
          return is_signed ? std::optional{dtype::i32} : std::nullopt;
        case 8:
          return is_signed ? std::optional{dtype::i64} : std::nullopt;
        default:
          return std::nullopt;
      }
    }
    case H5T_FLOAT: {
      if (size == 4) return dtype::f32;
      if (size == 8) return dtype::f64;
      if (size == 2) {
        std::size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
        if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0) return std::nullopt;
        if (spos == 15 && epos == 10 && esize == 5 && mpos == 0 && msize == 10) return dtype::f16;
        if (spos == 15 && epos == 7 && esize == 8 && mpos == 0 && msize == 7) return dtype::bf16;
      }
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

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

std::string dims_string(std::vector<hsize_t> const& dims) {
  std::string s = "[";
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (d > 0) s += ",";
    s += std::to_string(dims[d]);
  }
  return s + "]";
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
    silence_hdf5();
    fields.clear();  // datasets before the file
    file.reset();
  }

  [[noreturn]] void fail(std::string const& message) const { throw file_error(path, message); }

  void open();
  std::vector<std::string> discover_fields() const;
  void add_field(std::string const& dataset_path, bool has_userblock);
  void choose_path(field_info& f, bool has_userblock) const;

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
  std::shared_ptr<decoded_chunk> claim_entry(chunk_cache& cache, std::size_t k) const;
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
  silence_hdf5();
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    fail("not an HDF5 file (no HDF5 signature found)");
  }
  file = h5_id{H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  if (!file.valid()) fail(with_hdf5_error("cannot open as HDF5 (truncated or malformed?)"));
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int const err = errno;
    fail("cannot open: " + std::generic_category().message(err));
  }

  hsize_t userblock = 0;
  {
    h5_id fcpl{H5Fget_create_plist(file.get()), H5Pclose};
    if (!fcpl.valid() || H5Pget_userblock(fcpl.get(), &userblock) < 0) {
      fail(with_hdf5_error("cannot read the file creation properties"));
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
    fail(with_hdf5_error("cannot list the top-level datasets"));
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
  if (!f->dset.valid()) fail(with_hdf5_error("no dataset '" + dataset_path + "'"));

  h5_id space{H5Dget_space(f->dset.get()), H5Sclose};
  int const rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 0) fail(with_hdf5_error("cannot read the shape of dataset '" + dataset_path + "'"));
  if (rank == 0) {
    fail("dataset '" + dataset_path +
         "' is a scalar; a field needs a first dimension (the sample axis)");
  }
  f->dims.resize(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), f->dims.data(), nullptr);

  h5_id type{H5Dget_type(f->dset.get()), H5Tclose};
  if (!type.valid())
    fail(with_hdf5_error("cannot read the type of dataset '" + dataset_path + "'"));
  auto const mapped = map_type(type.get());
  if (!mapped) {
    fail("dataset '" + dataset_path + "' has type " + describe_type(type.get()) +
         ", which has no gpufeed dtype (supported: uint8, int8, uint16, int16, int32, int64, "
         "float16, bfloat16, float32, float64)");
  }
  f->type = *mapped;
  f->element_bytes = size_of(f->type);
  bool const big_endian = f->element_bytes > 1 && H5Tget_order(type.get()) == H5T_ORDER_BE;
  f->mem_type = h5_id{H5Tcopy(type.get()), H5Tclose};
  if (!f->mem_type.valid() ||
      (f->element_bytes > 1 && H5Tset_order(f->mem_type.get(), H5T_ORDER_LE) < 0)) {
    fail(with_hdf5_error("cannot make a memory type for dataset '" + dataset_path + "'"));
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
    // Still learn the chunking, for storage_chunk().
    h5_id dcpl{H5Dget_create_plist(f->dset.get()), H5Pclose};
    if (dcpl.valid() && H5Pget_layout(dcpl.get()) == H5D_CHUNKED) {
      std::vector<hsize_t> cdims(f->dims.size());
      if (H5Pget_chunk(dcpl.get(), rank, cdims.data()) >= 0) {
        f->chunk_rows = static_cast<std::size_t>(cdims[0]);
      }
    }
    H5Eclear2(H5E_DEFAULT);
  } else {
    if (big_endian) {
      f->path = hdf5_read_path::h5dread;
      f->reason = "stored big-endian (H5Dread converts it)";
    }
    choose_path(*f, has_userblock || big_endian);
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

// Decides how `f` is read; with `forced_fallback`, only learns the chunking (the reason is set).
void hdf5_dataset::impl::choose_path(field_info& f, bool forced_fallback) const {
  auto const fallback = [&](std::string reason) {
    f.path = hdf5_read_path::h5dread;
    if (f.reason.empty()) f.reason = std::move(reason);
  };
  h5_id dcpl{H5Dget_create_plist(f.dset.get()), H5Pclose};
  if (!dcpl.valid()) fail(with_hdf5_error("cannot read the layout of dataset '" + f.dataset + "'"));
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
        fail(with_hdf5_error("cannot read the chunk shape of dataset '" + f.dataset + "'"));
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
  silence_hdf5();
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
    fail(with_hdf5_error("H5Dread of field '" + f.name + "', sample " + std::to_string(index) +
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

// Under cache.mutex: an entry for chunk `k` that the caller will decode, taking the place of the
// least recently used decoded chunk when the cache is full (and reusing its memory when no reader
// holds it).
std::shared_ptr<decoded_chunk> hdf5_dataset::impl::claim_entry(chunk_cache& cache,
                                                               std::size_t k) const {
  cache_entry* victim = nullptr;
  if (cache.entries.size() >= options.cache_chunks) {
    for (auto& e : cache.entries) {
      if (e.data->ready && (victim == nullptr || e.used < victim->used)) victim = &e;
    }
  }
  if (victim == nullptr) victim = &cache.entries.emplace_back();  // room, or all in flight
  if (victim->data != nullptr && victim->data.use_count() == 1) {
    // Only the cache holds it (readers take references under the lock): reuse its buffer. The
    // fence orders the last reader's copy out of it (before its reference was dropped) before
    // the new decode's writes; use_count() alone is a relaxed read.
    std::atomic_thread_fence(std::memory_order_acquire);
    victim->data->ready = false;
    victim->data->error.clear();
  } else {
    victim->data = std::make_shared<decoded_chunk>();
  }
  victim->chunk = k;
  victim->used = cache.tick;
  return victim->data;
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
  auto& cache = f.cache;
  std::shared_ptr<decoded_chunk> data;
  bool decode = false;
  {
    std::unique_lock lock{cache.mutex};
    ++cache.tick;
    auto const it = std::find_if(cache.entries.begin(), cache.entries.end(),
                                 [k](auto const& e) { return e.chunk == k; });
    if (it != cache.entries.end()) {
      it->used = cache.tick;
      data = it->data;
      cache.decoded.wait(lock, [&] { return data->ready || !data->error.empty(); });
      if (!data->error.empty()) fail(data->error);
    } else {
      data = claim_entry(cache, k);
      decode = true;
    }
  }
  if (decode) {
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
    {
      std::lock_guard lock{cache.mutex};
      if (error.empty()) {
        data->ready = true;
      } else {
        // Leave nothing behind: the next read of this chunk tries again (and fails again).
        data->error = error;
        std::erase_if(cache.entries, [&](auto const& e) { return e.data == data; });
      }
    }
    cache.decoded.notify_all();
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
