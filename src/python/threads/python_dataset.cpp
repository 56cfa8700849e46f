#include "python/threads/python_dataset.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "gpufeed/sample_view.hpp"
#include "python/bindings/python_error.hpp"
#include "python/samples/sample_leaf.hpp"
#include "python/threads/gil.hpp"

namespace gpufeed::python {

namespace {

// Copies of at least this many bytes per sample are made with the GIL released, so that other
// workers run Python meanwhile; below it, giving the GIL back costs more than it frees.
constexpr std::size_t release_gil_from_bytes = 64 * 1024;

thread_local worker_info this_worker;

// this_worker (what get_worker_info() answers) for one read on a worker thread, however it ends.
class worker_scope {
 public:
  explicit worker_scope(worker_info const& info) noexcept { this_worker = info; }
  ~worker_scope() { this_worker = worker_info{}; }
  worker_scope(worker_scope const&) = delete;
  worker_scope& operator=(worker_scope const&) = delete;
};

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

worker_info const& current_worker_info() noexcept {
  return this_worker;
}

python_dataset::python_dataset(py::object data, py::object worker_init_fn)
    : dataset_{std::move(data)}, worker_init_fn_{std::move(worker_init_fn)} {
  if (!py::hasattr(dataset_, "__getitem__") || !py::hasattr(dataset_, "__len__")) {
    throw std::invalid_argument{
        "dataset: a " + std::string{Py_TYPE(dataset_.ptr())->tp_name} +
        " has no __len__ and __getitem__; gpufeed reads map-style datasets (an IterableDataset "
        "is not supported: index your data, or use gpufeed.datasets)"};
  }
  auto const length = py::len(dataset_);
  if (length == 0) throw std::invalid_argument{"dataset: it is empty (len() is 0)"};
  size_ = length;
  getitem_ = dataset_.attr("__getitem__");
}

namespace {
// A sample a worker thread read before the layout was known, and its own tree.
class python_staged final : public detail::staged_sample {
 public:
  python_staged(python_dataset const& owner, std::size_t index, py::object sample, sample_tree tree)
      : owner_{owner}, index_{index}, sample_{sample.release().ptr()}, tree_{std::move(tree)} {}
  ~python_staged() override {
    release_reference(sample_);
    if (python_usable()) {
      worker_gil const gil;
      tree_.clear();
    } else {
      tree_.clear_leaking();
    }
  }
  python_staged(python_staged const&) = delete;
  python_staged& operator=(python_staged const&) = delete;

  sample_spec spec() const override { return tree_.spec(); }
  void write(sample_view out) override {
    worker_gil const gil;
    owner_.write_sample(sample_, index_, out, gil);
  }
  [[nodiscard]] sample_tree const& tree() const noexcept { return tree_; }

 private:
  python_dataset const& owner_;
  std::size_t index_;
  PyObject* sample_;  // dropped under the GIL, from whatever thread
  sample_tree tree_;
};
}  // namespace

std::unique_ptr<detail::staged_sample> python_dataset::stage(std::size_t index,
                                                             read_context const& ctx) const {
  worker_gil const gil;
  worker_scope const scope{{true, ctx.worker, workers_.load(), ctx.seed, dataset_.ptr()}};
  try {
    init_worker(ctx.worker);
    py::object sample = getitem_(index);
    sample_tree tree;
    try {
      tree = sample_tree::infer(sample);
    } catch (std::invalid_argument const& e) {
      throw std::invalid_argument{"sample " + std::to_string(index) + ": " + e.what()};
    }
    return std::make_unique<python_staged>(*this, index, std::move(sample), std::move(tree));
  } catch (py::error_already_set& e) {
    e.restore();
    throw python_error::fetch();
  }
}

void python_dataset::layout_chosen(detail::staged_sample const& first) const {
  auto const& staged = dynamic_cast<python_staged const&>(first);
  worker_gil const gil;
  tree_ = sample_tree::from_description(staged.tree().describe(), staged.tree().spec(),
                                        staged.tree().kinds());
  texts_.resize(tree_.spec().size());
  for (std::size_t f = 0; f < texts_.size(); ++f) {
    auto const kind = tree_.kind_of(f);
    if (kind != sample_tree::leaf_kind::array) {
      texts_[f].emplace(kind == sample_tree::leaf_kind::bytes, size_ + text_values_beyond_length);
    }
  }
  learned_.store(true, std::memory_order_release);
}

sample_spec python_dataset::spec() const {
  if (!learned_.load(std::memory_order_acquire)) {
    throw logic_error{"gpufeed: the layout comes from the first sample a worker reads"};
  }
  return tree_.spec();
}

py::object python_dataset::structure() const {
  if (!learned_.load(std::memory_order_acquire)) return py::none();
  return tree_.describe();
}

python_dataset::~python_dataset() {
  if (!python_usable()) {
    // Leak: the interpreter is gone or going; touching the objects would crash.
    (void)dataset_.release();
    (void)getitem_.release();
    (void)worker_init_fn_.release();
    tree_.clear_leaking();
    for (auto& t : texts_) {
      if (t) t->clear_leaking();
    }
    return;
  }
  worker_gil const gil;
  dataset_ = py::object{};
  getitem_ = py::object{};
  worker_init_fn_ = py::object{};
  tree_.clear();
  for (auto& t : texts_) {
    if (t) t->clear();
  }
}

void python_dataset::init_worker(unsigned worker) const {
  {
    std::lock_guard const lock{init_mutex_};
    if (initialized_.size() <= worker) {
      initialized_.resize(worker + 1U, false);
      init_failures_.resize(worker + 1U);
    }
    if (init_failures_[worker]) std::rethrow_exception(init_failures_[worker]);
    if (initialized_[worker]) return;
    initialized_[worker] = true;
  }
  if (worker_init_fn_.is_none()) return;
  try {
    worker_init_fn_(worker);
  } catch (py::error_already_set& e) {
    // As in torch, a worker whose worker_init_fn failed reads nothing: the loader stops, and
    // the caller gets the exception itself.
    e.restore();
    auto failure = std::make_exception_ptr(
        python_worker_error{"gpufeed: worker_init_fn raised in worker thread " +
                                std::to_string(worker) + ", so the loader stopped",
                            python_error::fetch()});
    {
      std::lock_guard const lock{init_mutex_};
      init_failures_[worker] = failure;
    }
    std::rethrow_exception(failure);
  }
}

void python_dataset::read(std::size_t index, sample_view out, read_context const& ctx) const {
  worker_gil const gil;
  worker_scope const scope{{true, ctx.worker, workers_.load(), ctx.seed, dataset_.ptr()}};
  try {
    init_worker(ctx.worker);
    auto const started = now_ns();
    py::object sample = getitem_(index);
    python_ns_.fetch_add(now_ns() - started, std::memory_order_relaxed);
    write_sample(sample, index, out, gil);
  } catch (py::error_already_set& e) {
    e.restore();
    throw python_error::fetch();
  }
}

void python_dataset::write_sample(py::handle sample, std::size_t index, sample_view out,
                                  worker_gil const& gil) const {
  auto const started = now_ns();
  std::vector<std::unique_ptr<leaf_view>> leaves;
  std::size_t bytes = 0;
  try {
    leaves.resize(out.fields());
    tree_.for_each_leaf(sample, [&](std::size_t f, py::handle object, std::string const& path) {
      leaf_place const where{index, &path};
      if (texts_[f]) {
        auto const id = texts_[f]->intern(object, where);
        std::memcpy(out.bytes(f).data(), &id, sizeof id);
        return;
      }
      auto leaf = std::make_unique<leaf_view>(object.ptr(), where);
      auto const& want = out.spec()[f];
      if (leaf->type() != want.type) {
        throw std::invalid_argument{where.text() + " is " + std::string{to_string(leaf->type())} +
                                    " but the first sample's was " +
                                    std::string{to_string(want.type)} +
                                    "; return one dtype per field"};
      }
      std::span<std::int64_t const> const shape{leaf->shape(), leaf->rank()};
      if (!std::equal(shape.begin(), shape.end(), want.shape.begin(), want.shape.end())) {
        throw std::invalid_argument{where.text() + " has shape " + shape_text(shape) +
                                    " but the first sample's was " + shape_text(want.shape) +
                                    "; batches need one shape per field: resize, crop or pad "
                                    "in the dataset"};
      }
      bytes += leaf->bytes();
      leaves[f] = std::move(leaf);
    });
  } catch (py::error_already_set& e) {
    e.restore();
    throw python_error::fetch();
  }
  auto const copy_started = now_ns();
  auto const copy_all = [&] {
    for (std::size_t f = 0; f < leaves.size(); ++f) {
      if (leaves[f]) leaves[f]->copy_to(out.bytes(f).data());  // null: a text field, done
    }
  };
  if (bytes >= release_gil_from_bytes) {
    PyThreadState* const saved = PyEval_SaveThread();
    copy_all();
    PyEval_RestoreThread(saved);
  } else {
    copy_all();
  }
  auto const copied = now_ns();
  leaves.clear();  // PyBuffer_Release and DLPack deleters, under the GIL
  wait_ns_.fetch_add(gil.waited_ns(), std::memory_order_relaxed);
  python_ns_.fetch_add((copy_started - started) + (now_ns() - copied), std::memory_order_relaxed);
  copy_ns_.fetch_add(copied - copy_started, std::memory_order_relaxed);
  reads_.fetch_add(1, std::memory_order_relaxed);
}

py::list python_dataset::texts(batch const& b, std::size_t field) const {
  if (field >= texts_.size() || !texts_[field]) {
    throw std::invalid_argument{"texts: field " + std::to_string(field) +
                                " of the batch does not hold str or bytes"};
  }
  auto const view = b.host_field(field);
  std::span<std::int64_t const> const ids{static_cast<std::int64_t const*>(view.data()), b.size()};
  return texts_[field]->values(ids);
}

std::size_t python_dataset::texts_kept() const noexcept {
  std::size_t n = 0;
  for (auto const& t : texts_) {
    if (t) n += t->size();
  }
  return n;
}

bool python_dataset::read_on_this_thread() const noexcept {
  return this_worker.inside && this_worker.dataset == dataset_.ptr();
}

gil_times python_dataset::times() const noexcept {
  return {static_cast<double>(wait_ns_.load()) * 1e-9,
          static_cast<double>(python_ns_.load()) * 1e-9,
          static_cast<double>(copy_ns_.load()) * 1e-9, reads_.load()};
}

}  // namespace gpufeed::python
