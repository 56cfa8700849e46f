#pragma once
// A Python dataset read by worker processes, seen by the loader as any gpufeed::dataset: each
// read goes to the worker process of the reading thread (worker w of the loader drives process
// w), which calls __getitem__ and writes the sample's arrays straight into its slot, in the
// shared arena (the loader's host memory, loader_options::host_memory). The loader's process
// never runs the dataset's Python code, so its GIL stays with the training loop.
//
// One task per claim (dataset::read_each), posted in the worker's mailbox (mailbox.hpp); the
// layout comes from the first sample a worker reads (dataset::stage), and every worker gets it
// before its first read. Text leaves come back in the reply and are kept here, without Python.
// A dead worker is a worker_death: which worker, its pid, how it ended and the samples it held,
// as fields, which Python formats (gpufeed.WorkerError).

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpufeed/batch.hpp"
#include "gpufeed/detail/adapted_dataset.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/options.hpp"
#include "python/workers/layout_message.hpp"
#include "python/workers/mailbox.hpp"
#include "python/workers/shared_arena.hpp"
#include "python/workers/shared_memory.hpp"

namespace gpufeed::python::workers {

namespace py = pybind11;

class text_values;

/// The dataset's exception, raised in a worker process: its text, and the pickled (type,
/// message) that gpufeed's Python side raises again as the dataset's own type.
class remote_python_error : public std::runtime_error {
 public:
  remote_python_error(std::string const& text, std::string pickled)
      : std::runtime_error{text}, pickled_{std::move(pickled)} {}
  [[nodiscard]] std::string const& pickled() const noexcept { return pickled_; }

 private:
  std::string pickled_;
};

/// A worker process that cannot go on because of the user's code (worker_init_fn raised): the
/// loader stops, and the exception is raised again as its own type.
class remote_worker_error : public worker_error {
 public:
  remote_worker_error(std::string const& text, std::string pickled)
      : worker_error{text}, pickled_{std::move(pickled)} {}
  [[nodiscard]] std::string const& pickled() const noexcept { return pickled_; }

 private:
  std::string pickled_;
};

/// What a worker process held when it died: samples of an epoch, or, holding none, a task
/// named in words ("the batch layout", "a staged sample").
struct held_samples {
  std::vector<std::size_t> indices;
  std::uint64_t epoch = 0;
  std::string task;  ///< what the worker was doing when `indices` is empty
};

/// "sample 3 of epoch 0", "samples 3, 4 of epoch 0", or the task: for messages.
[[nodiscard]] std::string held_text(held_samples const& held);

/// A worker process that died. How it ended is known where the process is the loader's child
/// (fork, spawn); a forkserver's workers are the server's children, whose status only
/// multiprocessing hears: there `how()` is `ending::unknown`, and Python fills it in.
class worker_death : public worker_error {
 public:
  enum class ending { unknown, exited, killed };
  /// `code`: the exit status (`exited`), the signal (`killed`), or 0 (`unknown`).
  worker_death(unsigned worker, int pid, ending how, int code, held_samples held);

  [[nodiscard]] unsigned worker() const noexcept { return worker_; }
  [[nodiscard]] int pid() const noexcept { return pid_; }
  [[nodiscard]] ending how() const noexcept { return how_; }
  [[nodiscard]] int code() const noexcept { return code_; }
  [[nodiscard]] held_samples const& held() const noexcept { return held_; }

 private:
  unsigned worker_;
  int pid_;
  ending how_;
  int code_;
  held_samples held_;
};

class process_dataset final : public detail::adapted_dataset {
 public:
  /// `size` samples, read by `workers` processes (started by the caller, then attach()ed).
  /// With `collate` the workers make each batch whole, with the user's collate_fn: the ring's
  /// slots only carry the batches, whose output lives in a block of the arena per slot, grown
  /// to the largest batch seen, all blocks within `collate_budget` bytes.
  /// With `iterable` (and `collate`), the dataset is an iterable one, open-ended
  /// (`open_ended_sources()`: one source per worker): each worker takes a batch's samples from
  /// its own iterator (the indices are only the batch's places, and `size` is not read), and
  /// says when its iterator ends; the loader ends the epoch once every worker's has.
  process_dataset(std::size_t size, unsigned workers, bool collate = false,
                  std::size_t collate_budget = 0, bool iterable = false);
  ~process_dataset() override;
  process_dataset(process_dataset const&) = delete;
  process_dataset& operator=(process_dataset const&) = delete;

  /// What worker `w` needs to open its side: the control region, the arena, its two eventfds.
  struct worker_files {
    int control = -1;
    int arena = -1;
    int to_worker = -1;
    int to_main = -1;
  };
  [[nodiscard]] worker_files files(unsigned worker) const;
  [[nodiscard]] std::size_t arena_reserve() const noexcept { return arena_->reserved(); }
  [[nodiscard]] unsigned workers() const noexcept { return static_cast<unsigned>(links_.size()); }
  /// Worker `w` runs as process `pid`: its death is seen from now on. Tasks posted before wait
  /// for it (the processes start when the loader is first iterated, its workers read before).
  /// @throws logic_error after release_workers().
  void attach(unsigned worker, int pid);
  /// Asks every worker to leave its loop once the task in hand is done (the caller joins them,
  /// and ends those that do not leave).
  void stop_workers() noexcept;
  /// Once every worker is reaped: closes the files they shared (the eventfds, the pidfds, the
  /// descriptors of the mailboxes and of the arena, whose memory stays mapped for the batches
  /// alive). Every later task fails, saying the loader is closed.
  void release_workers() noexcept;

  [[nodiscard]] std::shared_ptr<shared_arena> const& arena() const noexcept { return arena_; }
  /// The ring's memory is the arena the worker processes write into.
  [[nodiscard]] std::shared_ptr<detail::host_memory_source> host_memory() const override {
    return arena_;
  }

  /// Where the collated batch held by slot memory `slot` lies: the arena block's memory and the
  /// bytes the output takes. @throws std::out_of_range for a slot no batch was collated into.
  struct collated {
    std::byte* data = nullptr;
    std::size_t bytes = 0;
  };
  [[nodiscard]] collated collated_batch(std::byte const* slot) const;

  // dataset
  [[nodiscard]] std::size_t size() const override { return size_; }
  [[nodiscard]] sample_spec spec() const override;
  void read(std::size_t index, sample_view out, read_context const& ctx) const override;
  void read_each(std::span<detail::sample_read> reads) const override;
  [[nodiscard]] bool reads_claims() const override { return true; }
  [[nodiscard]] bool reads_whole_batches() const override { return collate_; }
  [[nodiscard]] bool layout_from_first_sample() const override { return !collate_; }
  [[nodiscard]] std::size_t open_ended_sources() const override {
    return iterable_ ? links_.size() : 0;
  }
  [[nodiscard]] std::unique_ptr<detail::staged_sample> stage(
      std::size_t index, read_context const& ctx) const override;
  void layout_chosen(detail::staged_sample const& first) const override;

  /// The sample's structure as pickled by the worker that gave the layout; empty before.
  [[nodiscard]] std::string structure() const;
  /// The str or bytes values of text field `field` of `b`, one per sample (GIL held).
  [[nodiscard]] py::list texts(batch const& b, std::size_t field) const;
  /// Distinct text values kept so far, over all text fields.
  [[nodiscard]] std::size_t texts_kept() const;

  /// Writes worker `worker`'s staged sample `token` into `out`; forgets it (detail::staged_sample).
  void write_staged(unsigned worker, std::uint64_t token, sample_view out) const;
  /// Forgets a staged sample that is not written (best effort, never throws).
  void drop_staged(unsigned worker, std::uint64_t token) const noexcept;

 private:
  struct link;

  /// Posts a task to `w` (its mutex held by the caller), written by `write(payload_writer&)`,
  /// and waits for the reply; `holding` is what a death reports the worker held.
  template <class Write>
  reply_status exchange(link& w, task_kind kind, Write const& write, held_samples const& holding,
                        std::atomic<bool> const* stop) const;
  /// Sends the loader's layout to `w` once, before its first read or write.
  void send_layout(link& w, std::atomic<bool> const* stop) const;
  /// Takes the records of a read or write reply for the samples `outs`, from byte `from` of the
  /// reply: each text value's id written into its sample, each failure kept in `failures`.
  /// @throws std::runtime_error when the reply is malformed.
  void take_records(link& w, std::span<sample_view const> outs, std::span<std::size_t const> ids,
                    std::span<std::exception_ptr> failures, std::size_t from = 0) const;
  [[noreturn]] void throw_fatal(link& w) const;
  /// A whole batch, made by the worker's collate_fn into the slot's block.
  void collate_each(link& w, std::span<detail::sample_read> reads) const;
  /// Throws the worker_death of `w`, whose process is gone, holding `holding`.
  [[noreturn]] void throw_dead(link& w, held_samples const& holding) const;
  /// Throws `w`'s failure, kept so that every later task of `w` throws it again.
  [[noreturn]] static void fail(link& w, std::exception_ptr failure);

  std::size_t size_;
  bool collate_;
  bool iterable_;
  std::size_t collate_budget_;
  std::shared_ptr<shared_arena> arena_;
  // collate_fn's output per slot (by the slot's memory): its block and what it holds.
  struct block_of_slot {
    std::uint64_t offset = 0;
    std::size_t capacity = 0;
    std::size_t used = 0;
  };
  mutable std::mutex blocks_mutex_;
  mutable std::unordered_map<std::byte const*, block_of_slot> blocks_;
  mutable std::size_t block_bytes_ = 0;    // every block made, outgrown ones included
  mutable std::size_t largest_batch_ = 0;  // the largest output so far: a new block's size
  shared_mapping control_;
  std::vector<std::unique_ptr<link>> links_;
  std::atomic<bool> released_{false};  // release_workers() ran: no worker to wake
  std::mutex attach_mutex_;            // attach() against release_workers()
  mutable std::mutex layout_mutex_;
  mutable std::optional<sample_layout_message> layout_;      // the loader's, once chosen
  mutable std::vector<std::unique_ptr<text_values>> texts_;  // per field; null for arrays
};

}  // namespace gpufeed::python::workers
