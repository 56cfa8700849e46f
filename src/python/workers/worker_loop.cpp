#include "python/workers/worker_loop.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "python/bindings/python_error.hpp"
#include "python/samples/sample_leaf.hpp"
#include "python/samples/sample_tree.hpp"
#include "python/samples/text_table.hpp"
#include "python/workers/layout_message.hpp"
#include "python/workers/mailbox.hpp"
#include "python/workers/parent_watch.hpp"
#include "python/workers/shared_memory.hpp"

namespace gpufeed::python::workers {

namespace {

// How often a worker without a pidfd for the loader's process checks that it still runs.
constexpr int parent_check_ms = 1000;

// A sample's failure, as a reply records it.
struct failure {
  record_kind kind = record_kind::check_error;
  std::string text;
  std::string pickled;  // python_error only
};

class worker {
 public:
  worker(py::object const& dataset, worker_setup const& setup, worker_calls const& calls)
      : setup_{setup},
        calls_{calls},
        control_{shared_mapping::open(setup.control_fd, control_bytes(setup.workers))},
        arena_{shared_mapping::open(setup.arena_fd, setup.arena_reserve)},
        box_{reinterpret_cast<mailbox*>(control_.base() + setup.worker * sizeof(mailbox))},
        parent_{open_pidfd(setup.main_pid)},
        dataset_{dataset},
        getitem_{calls.iterable ? py::object{} : dataset.attr("__getitem__")},
        describe_{calls.describe},
        pickle_{py::module_::import("pickle")} {
    if (!control_.holds(setup.worker * sizeof(mailbox), sizeof(mailbox))) {
      throw std::runtime_error{"gpufeed: worker " + std::to_string(setup.worker) +
                               " has no mailbox in the control region"};
    }
    handled_ = box_->answered.load(std::memory_order_acquire);
  }

  // Returns when told to stop, or when the loader's process is gone.
  void run() {
    auto const& init_error = calls_.init_error;
    for (;;) {
      if (!wait_for_task()) return;
      auto const sequence = box_->posted.load(std::memory_order_acquire);
      auto const kind = static_cast<task_kind>(box_->kind);
      std::vector<std::byte> task(box_->payload, box_->payload + box_->bytes);
      payload_reader in{task};
      payload_writer out{std::span{box_->payload, mailbox_payload_bytes}};
      auto status = reply_status::ok;
      try {
        if (!init_error.is_none()) {
          status = fatal(out, init_error);
        } else {
          status = handle(kind, in, out);
        }
      } catch (payload_overflow const& e) {
        out = payload_writer{std::span{box_->payload, mailbox_payload_bytes}};
        status = fatal(out, py::make_tuple(std::string{e.what()} +
                                               " (the reply: text leaves or an error message)",
                                           py::none()));
      } catch (std::exception const& e) {
        out = payload_writer{std::span{box_->payload, mailbox_payload_bytes}};
        status = fatal(out, py::make_tuple("gpufeed: worker " + std::to_string(setup_.worker) +
                                               ": " + e.what(),
                                           py::none()));
      }
      answer(sequence, status, out.used());
    }
  }

 private:
  // False when the loader asks this worker to stop, or its process is gone.
  bool wait_for_task() {
    while (box_->posted.load(std::memory_order_acquire) == handled_) {
      if (box_->stop.load(std::memory_order_acquire)) return false;
      wait_result result;
      {
        py::gil_scoped_release const released;  // the worker's own threads may run meanwhile
        result = wait_event(setup_.to_worker_fd, parent_.get(), parent_ ? -1 : parent_check_ms);
      }
      if (result == wait_result::ready) {
        drain_event(setup_.to_worker_fd);
      } else if (result == wait_result::peer_gone ||
                 (!parent_ && ::kill(setup_.main_pid, 0) != 0)) {
        return false;  // the loader's process is gone: nobody will read what this worker writes
      }
    }
    return !box_->stop.load(std::memory_order_acquire);
  }

  void answer(std::uint64_t sequence, reply_status status, std::size_t bytes) {
    box_->status = static_cast<std::uint32_t>(status);
    box_->bytes = bytes;
    handled_ = sequence;
    box_->answered.store(sequence, std::memory_order_release);
    signal_event(setup_.to_main_fd);
  }

  static reply_status fatal(payload_writer& out, py::handle pair) {
    auto const t = py::reinterpret_borrow<py::tuple>(pair);
    out.put_bytes(t[0].cast<std::string>());
    out.put_bytes(t[1].is_none() ? std::string{} : t[1].cast<std::string>());
    return reply_status::fatal;
  }

  reply_status handle(task_kind kind, payload_reader& in, payload_writer& out) {
    switch (kind) {
      case task_kind::layout:
        adopt(get_layout(in));
        return reply_status::ok;
      case task_kind::stage:
        stage(in, out);
        return reply_status::ok;
      case task_kind::drop_staged:
        staged_.erase(in.get<std::uint64_t>());
        return reply_status::ok;
      case task_kind::write_staged:
        write_staged(in, out);
        return reply_status::ok;
      case task_kind::read:
        read(in, out);
        return reply_status::ok;
      case task_kind::collate:
      case task_kind::collate_write:
        collate(kind, in, out);
        return reply_status::ok;
    }
    throw std::runtime_error{"an unknown task " + std::to_string(static_cast<unsigned>(kind))};
  }

  void adopt(sample_layout_message layout) {
    auto const description = pickle_.attr("loads")(py::bytes(layout.structure));
    tree_.emplace(sample_tree::from_description(description, layout.spec, layout.kinds));
    spec_ = std::move(layout.spec);
  }

  // Reads sample `index`, or says why it could not (the dataset's exception, or gpufeed's).
  std::optional<py::object> get(std::size_t index, std::uint64_t epoch, failure& failed) {
    try {
      return getitem_(index);
    } catch (py::error_already_set& e) {
      e.restore();
      failed = described(python_error::fetch(), index, epoch);
      return std::nullopt;
    }
  }

  failure described(python_error const& error, std::size_t index, std::uint64_t epoch) {
    auto const exception = py::reinterpret_steal<py::object>(error.exception());
    try {
      auto const pair = describe_(exception, index, epoch);
      return {record_kind::python_error, pair[py::int_(0)].cast<std::string>(),
              pair[py::int_(1)].cast<std::string>()};
    } catch (py::error_already_set const&) {
      return {record_kind::python_error, error.what(), {}};
    }
  }

  void stage(payload_reader& in, payload_writer& out) {
    auto const index = in.get<std::uint64_t>();
    auto const epoch = in.get<std::uint64_t>();
    auto const token = in.get<std::uint64_t>();
    failure failed;
    auto sample = get(index, epoch, failed);
    if (sample) {
      try {
        auto const tree = sample_tree::infer(*sample);
        sample_layout_message layout{tree.spec(), tree.kinds(), {}};
        try {
          layout.structure = pickle_.attr("dumps")(tree.describe()).cast<std::string>();
        } catch (py::error_already_set& e) {
          throw std::invalid_argument{
              "the sample's structure cannot be sent from a worker process (" +
              std::string{e.what()} +
              "): with worker processes its namedtuple and mapping types must be importable, "
              "as torch's workers need them to be picklable (define them at module level), or "
              "use worker_type='thread'"};
        }
        out.put<std::uint8_t>(1);
        put_layout(out, layout);
        staged_.emplace(token, staged{index, epoch, std::move(*sample)});
        return;
      } catch (std::invalid_argument const& e) {
        failed = {
            record_kind::check_error, "sample " + std::to_string(index) + ": " + e.what(), {}};
      } catch (python_error const& e) {
        failed = described(e, index, epoch);
      }
    }
    out.put<std::uint8_t>(0);
    out.put<std::uint8_t>(static_cast<std::uint8_t>(failed.kind));
    out.put_bytes(failed.text);
    if (failed.kind == record_kind::python_error) out.put_bytes(failed.pickled);
  }

  // The records of one reply: the count first, written when they are all known.
  class records {
   public:
    explicit records(payload_writer& out) : out_{out}, at_{out.used()} {
      out_.put<std::uint32_t>(0);
    }
    void text(std::uint32_t k, std::uint32_t field, std::string_view value) {
      out_.put<std::uint8_t>(static_cast<std::uint8_t>(record_kind::text)).put<std::uint32_t>(k);
      out_.put<std::uint32_t>(field).put_bytes(value);
      ++count_;
    }
    void failed(std::uint32_t k, failure const& f) {
      out_.put<std::uint8_t>(static_cast<std::uint8_t>(f.kind)).put<std::uint32_t>(k);
      out_.put_bytes(f.text);
      if (f.kind == record_kind::python_error) out_.put_bytes(f.pickled);
      ++count_;
    }
    void finish(std::span<std::byte> area) const {
      std::memcpy(area.data() + at_, &count_, sizeof count_);
    }

   private:
    payload_writer& out_;
    std::size_t at_;
    std::uint32_t count_ = 0;
  };

  // Writes `sample` (index `index`) at `dests` (arena offsets per field), or records why not.
  void write(py::handle sample, std::size_t index, std::uint64_t epoch, std::uint32_t k,
             std::span<std::uint64_t const> dests, records& out) {
    if (!tree_) throw std::runtime_error{"a sample to write before the layout"};
    if (dests.size() != spec_.size()) {
      throw std::runtime_error{"a task with " + std::to_string(dests.size()) +
                               " fields for a layout of " + std::to_string(spec_.size())};
    }
    texts_.clear();
    try {
      tree_->for_each_leaf(sample, [&](std::size_t f, py::handle object, std::string const& path) {
        leaf_place const where{index, &path};
        if (tree_->kind_of(f) != sample_tree::leaf_kind::array) {
          texts_.emplace_back(f, text_of(object, tree_->kind_of(f), where));
          return;
        }
        leaf_view const leaf{object.ptr(), where};
        auto const& want = spec_[f];
        if (leaf.type() != want.type) {
          throw std::invalid_argument{where.text() + " is " + std::string{to_string(leaf.type())} +
                                      " but the first sample's was " +
                                      std::string{to_string(want.type)} +
                                      "; return one dtype per field"};
        }
        std::span<std::int64_t const> const shape{leaf.shape(), leaf.rank()};
        if (!std::equal(shape.begin(), shape.end(), want.shape.begin(), want.shape.end())) {
          throw std::invalid_argument{where.text() + " has shape " + shape_text(shape) +
                                      " but the first sample's was " + shape_text(want.shape) +
                                      "; batches need one shape per field: resize, crop or pad "
                                      "in the dataset"};
        }
        if (!arena_.holds(dests[f], leaf.bytes())) arena_.follow();  // the ring grew
        if (!arena_.holds(dests[f], leaf.bytes())) {
          throw std::runtime_error{"a slot outside the shared ring"};
        }
        leaf.copy_to(arena_.base() + dests[f]);
      });
    } catch (py::error_already_set& e) {
      e.restore();
      out.failed(k, described(python_error::fetch(), index, epoch));
      return;
    } catch (python_error const& e) {
      out.failed(k, described(e, index, epoch));
      return;
    } catch (std::invalid_argument const& e) {
      out.failed(k, {record_kind::check_error, e.what(), {}});
      return;
    }
    for (auto const& [f, value] : texts_) out.text(k, static_cast<std::uint32_t>(f), value);
  }

  static std::string text_of(py::handle object, sample_tree::leaf_kind kind,
                             leaf_place const& where) {
    bool const bytes = kind == sample_tree::leaf_kind::bytes;
    if (bytes ? PyBytes_Check(object.ptr()) == 0 : PyUnicode_Check(object.ptr()) == 0) {
      throw std::invalid_argument{where.text() + " is " +
                                  std::string{Py_TYPE(object.ptr())->tp_name} +
                                  " but the first sample's was " + (bytes ? "bytes" : "str") +
                                  "; return one type per field"};
    }
    if (bytes) {
      return {PyBytes_AS_STRING(object.ptr()),
              static_cast<std::size_t>(PyBytes_GET_SIZE(object.ptr()))};
    }
    Py_ssize_t size = 0;
    char const* utf8 = PyUnicode_AsUTF8AndSize(object.ptr(), &size);
    if (utf8 == nullptr) throw py::error_already_set();
    return {utf8, static_cast<std::size_t>(size)};
  }

  void read(payload_reader& in, payload_writer& out) {
    auto const epoch = in.get<std::uint64_t>();
    auto const count = in.get<std::uint32_t>();
    auto const fields = in.get<std::uint32_t>();
    records replies{out};
    std::vector<std::uint64_t> dests(fields);
    for (std::uint32_t k = 0; k < count; ++k) {
      auto const index = in.get<std::uint64_t>();
      for (auto& d : dests) d = in.get<std::uint64_t>();
      failure failed;
      auto const sample = get(index, epoch, failed);
      if (!sample) {
        replies.failed(k, failed);
        continue;
      }
      write(*sample, index, epoch, k, dests, replies);
    }
    replies.finish({box_->payload, mailbox_payload_bytes});
  }

  // A whole batch: its samples, collate_fn's output, laid out in the block the task names (or
  // kept, when it needs a larger one: the loader makes it and asks again, collate_write).
  void collate(task_kind kind, payload_reader& in, payload_writer& out) {
    auto const epoch = in.get<std::uint64_t>();
    auto const run = in.get<std::uint64_t>();
    auto const offset = in.get<std::uint64_t>();
    auto const capacity = in.get<std::uint64_t>();
    if (kind == task_kind::collate) {
      pending_ = py::object{};
      auto const count = in.get<std::uint32_t>();
      py::list samples;
      std::size_t first_index = 0;
      if (calls_.iterable) {
        failure failed;
        if (!take_from_iterator(count, epoch, run, samples, failed)) {
          collate_failed(out, failed);
          return;
        }
        if (samples.empty() ||
            (calls_.drop_last && static_cast<std::size_t>(py::len(samples)) < count)) {
          out.put<std::uint8_t>(static_cast<std::uint8_t>(collate_result::ended));
          return;
        }
      }
      for (std::uint32_t k = 0; k < count && !calls_.iterable; ++k) {
        auto const index = in.get<std::uint64_t>();
        if (k == 0) first_index = index;
        failure failed;
        auto sample = get(index, epoch, failed);
        if (!sample) {
          collate_failed(out, failed);
          return;
        }
        samples.append(*sample);
      }
      try {
        pending_ = calls_.pack(calls_.collate_fn(samples));
      } catch (py::error_already_set& e) {
        e.restore();
        collate_failed(out, described(python_error::fetch(), first_index, epoch));
        return;
      }
    }
    if (!pending_) throw std::runtime_error{"a collate_write with no batch kept"};
    auto const bytes = pending_.cast<py::tuple>()[0].cast<std::uint64_t>();
    if (bytes > capacity) {
      out.put<std::uint8_t>(static_cast<std::uint8_t>(collate_result::larger));
      out.put<std::uint64_t>(bytes);
      return;
    }
    if (!arena_.holds(offset, capacity)) arena_.follow();  // the loader grew the arena
    if (!arena_.holds(offset, capacity)) throw std::runtime_error{"a block outside the ring"};
    auto const view = py::reinterpret_steal<py::object>(
        PyMemoryView_FromMemory(reinterpret_cast<char*>(arena_.base() + offset),
                                static_cast<Py_ssize_t>(capacity), PyBUF_WRITE));
    if (!view) throw py::error_already_set();
    auto const packed = pending_.cast<py::tuple>();
    calls_.write(view, packed[1], packed[2]);
    pending_ = py::object{};
    out.put<std::uint8_t>(static_cast<std::uint8_t>(collate_result::written));
    out.put<std::uint64_t>(bytes);
  }

  // Up to `count` samples from this worker's iterator over the dataset, made again when the
  // epoch or its run changes (as torch's workers iterate their copy anew at every iter(), and an
  // epoch started over is a new run). False when the iterator raised (`failed` says how).
  bool take_from_iterator(std::uint32_t count, std::uint64_t epoch, std::uint64_t run,
                          py::list& samples, failure& failed) {
    try {
      if (!iterator_ || iterator_epoch_ != epoch || iterator_run_ != run) {
        iterator_ = py::iter(dataset_);
        iterator_epoch_ = epoch;
        iterator_run_ = run;
        exhausted_ = false;
      }
      while (!exhausted_ && static_cast<std::uint32_t>(py::len(samples)) < count) {
        PyObject* item = PyIter_Next(iterator_.ptr());
        if (item == nullptr) {
          if (PyErr_Occurred() != nullptr) throw py::error_already_set();
          exhausted_ = true;
          break;
        }
        samples.append(py::reinterpret_steal<py::object>(item));
      }
      return true;
    } catch (py::error_already_set& e) {
      e.restore();
      failed = described(python_error::fetch(), 0, epoch);
      exhausted_ = true;  // an iterator that raised is done: torch's would be too
      return false;
    }
  }

  void collate_failed(payload_writer& out, failure const& failed) {
    out.put<std::uint8_t>(static_cast<std::uint8_t>(collate_result::failed));
    records replies{out};
    replies.failed(0, failed);
    replies.finish({box_->payload, mailbox_payload_bytes});
  }

  void write_staged(payload_reader& in, payload_writer& out) {
    auto const token = in.get<std::uint64_t>();
    auto const fields = in.get<std::uint32_t>();
    std::vector<std::uint64_t> dests(fields);
    for (auto& d : dests) d = in.get<std::uint64_t>();
    records replies{out};
    auto const found = staged_.find(token);
    if (found == staged_.end()) {
      replies.failed(0,
                     {record_kind::check_error, "a staged sample this worker does not hold", {}});
    } else {
      auto const kept = std::move(found->second);
      staged_.erase(found);
      write(kept.sample, kept.index, kept.epoch, 0, dests, replies);
    }
    replies.finish({box_->payload, mailbox_payload_bytes});
  }

  worker_setup setup_;
  worker_calls calls_;
  py::object pending_;  // a collate_fn's packed output waiting for a larger block
  shared_mapping control_;
  shared_mapping arena_;
  mailbox* box_;
  file_descriptor parent_;
  py::object dataset_;
  py::object getitem_;
  py::object iterator_;  // an iterable dataset's, for iterator_epoch_'s run iterator_run_
  std::uint64_t iterator_epoch_ = 0;
  std::uint64_t iterator_run_ = 0;
  bool exhausted_ = false;
  py::object describe_;
  py::module_ pickle_;
  std::optional<sample_tree> tree_;
  sample_spec spec_;
  struct staged {
    std::size_t index;
    std::uint64_t epoch;
    py::object sample;
  };
  std::unordered_map<std::uint64_t, staged> staged_;
  std::vector<std::pair<std::size_t, std::string>> texts_;  // one sample's text leaves
  std::uint64_t handled_ = 0;
};

}  // namespace

void run_worker_loop(py::object const& dataset, worker_setup const& setup,
                     worker_calls const& calls) {
  parent_watch const watch{setup.main_pid};
  worker w{dataset, setup, calls};
  w.run();
}

}  // namespace gpufeed::python::workers
