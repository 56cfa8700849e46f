#pragma once
// Any map-style Python dataset (__len__ and __getitem__) as a gpufeed::dataset read by worker
// threads (worker_type="thread"): they call __getitem__ holding the GIL only inside Python, and
// copy each sample's leaves straight into the batch slot (no collate, no stack), with the GIL
// released for large copies. The layout comes from the first sample a worker reads
// (dataset::stage), so nothing is read on the thread that makes the loader.

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <vector>

#include "gpufeed/batch.hpp"
#include "gpufeed/detail/adapted_dataset.hpp"
#include "python/samples/sample_tree.hpp"
#include "python/samples/text_table.hpp"
#include "python/threads/gil.hpp"

namespace gpufeed::python {

namespace py = pybind11;

/// How much of the workers' time went to Python: waiting for the GIL, and running with it.
struct gil_times {
  double wait_s = 0;    ///< waiting to take the GIL (other threads held it)
  double python_s = 0;  ///< holding it: __getitem__ and reading the sample's leaves
  double copy_s = 0;    ///< copying leaves into the batch, GIL released where large
  std::uint64_t reads = 0;
};

/// What a worker thread is, as gpufeed.get_worker_info() reports it; empty outside workers.
struct worker_info {
  bool inside = false;
  unsigned id = 0;
  unsigned workers = 0;
  std::uint64_t seed = 0;
  PyObject* dataset = nullptr;  // borrowed: the dataset outlives its reads
};

/// The calling thread's worker information (GIL held).
[[nodiscard]] worker_info const& current_worker_info() noexcept;

class python_dataset final : public detail::adapted_dataset {
 public:
  /// Takes len(dataset) (GIL held); reads nothing.
  /// @param worker_init_fn called once on each worker thread, with its id, before its first read
  /// (None: no call).
  python_dataset(py::object data, py::object worker_init_fn);
  /// Drops the Python objects under the GIL when Python is still usable (leaks them otherwise).
  ~python_dataset() override;
  python_dataset(python_dataset const&) = delete;
  python_dataset& operator=(python_dataset const&) = delete;

  [[nodiscard]] std::size_t size() const override { return size_; }
  /// The layout learned from the first sample. @throws logic_error before.
  [[nodiscard]] sample_spec spec() const override;
  void read(std::size_t index, sample_view out, read_context const& ctx) const override;
  [[nodiscard]] bool layout_from_first_sample() const override { return true; }
  [[nodiscard]] std::unique_ptr<detail::staged_sample> stage(
      std::size_t index, read_context const& ctx) const override;
  void layout_chosen(detail::staged_sample const& first) const override;

  /// The sample's structure (see sample_tree::describe), GIL held; None before the first
  /// sample is read.
  [[nodiscard]] py::object structure() const;
  /// Writes `sample` (sample `index`) into `out`, the GIL held by `gil` (staged samples).
  void write_sample(py::handle sample, std::size_t index, sample_view out,
                    worker_gil const& gil) const;
  /// The str or bytes values of text field `field` of `b`, one per sample (GIL held).
  /// @throws std::invalid_argument when the field does not hold text.
  [[nodiscard]] py::list texts(batch const& b, std::size_t field) const;
  /// Distinct text values kept so far, over all text fields (GIL held).
  [[nodiscard]] std::size_t texts_kept() const noexcept;
  /// The number of worker threads, for get_worker_info().num_workers.
  void set_workers(unsigned workers) noexcept { workers_.store(workers); }
  [[nodiscard]] gil_times times() const noexcept;
  /// Whether the calling thread is inside a read of this dataset's Python object, i.e. is a
  /// worker of a loader reading it (Python's garbage collector can run there and drop that
  /// loader, which must not join the thread it runs on).
  [[nodiscard]] bool read_on_this_thread() const noexcept;

 private:
  void init_worker(unsigned worker) const;

  py::object dataset_;
  py::object getitem_;
  py::object worker_init_fn_;
  // The layout's tree, set once (layout_chosen) before any read or write uses it.
  mutable sample_tree tree_;
  mutable std::atomic<bool> learned_{false};
  // Per field: the text table of a str or bytes field, empty for the others. Read and grown
  // under the GIL only (text_table).
  mutable std::vector<std::optional<text_table>> texts_;
  std::size_t size_ = 0;
  std::atomic<unsigned> workers_{0};
  mutable std::mutex init_mutex_;
  mutable std::vector<bool> initialized_;  // per worker, under init_mutex_
  // Per worker, what its worker_init_fn raised: every later read of that worker raises it again.
  mutable std::vector<std::exception_ptr> init_failures_;  // under init_mutex_
  mutable std::atomic<std::int64_t> wait_ns_{0};
  mutable std::atomic<std::int64_t> python_ns_{0};
  mutable std::atomic<std::int64_t> copy_ns_{0};
  mutable std::atomic<std::uint64_t> reads_{0};
};

}  // namespace gpufeed::python
