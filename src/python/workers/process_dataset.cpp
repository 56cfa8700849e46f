#include "process_dataset.hpp"

#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "../gil.hpp"
#include "../text_table.hpp"
#include "core/host_resources.hpp"
#include "text_values.hpp"

namespace gpufeed::python::workers {

namespace {
// How often a wait for a worker checks whether the loader stopped (a death is seen at once).
constexpr int stop_check_ms = 100;

// The most address space the ring may take: twice the machine's memory, at least 64 GiB (it
// costs nothing until written).
std::size_t arena_reserve_bytes() {
  auto const physical = detail::physical_memory_bytes();
  return std::max<std::size_t>(std::size_t{64} << 30, 2 * physical);
}

std::string samples_text(std::span<sample_read const> reads) {
  std::string text = reads.size() == 1 ? "sample " : "samples ";
  for (std::size_t k = 0; k < reads.size(); ++k) {
    text += (k == 0 ? "" : ", ") + std::to_string(reads[k].index);
  }
  return text + " of epoch " + std::to_string(reads.front().context.epoch);
}

std::string signal_name(int signal) {
  char const* abbrev = ::sigabbrev_np(signal);
  return abbrev != nullptr ? std::string{"SIG"} + abbrev : std::to_string(signal);
}
}  // namespace

// ---- one worker
// -----------------------------------------------------------------------------------

struct process_dataset::link {
  unsigned id = 0;
  mailbox* box = nullptr;
  file_descriptor to_worker;
  file_descriptor to_main;
  file_descriptor pidfd;
  int pid = -1;
  std::mutex mutex;  // one task at a time
  std::uint64_t sequence = 0;
  bool layout_sent = false;
  std::uint64_t next_token = 0;
  std::string death;  // how it ended, once it did: every later task fails so
};

// A sample a worker process read and keeps until it can be written.
class remote_staged final : public staged_sample {
 public:
  remote_staged(process_dataset const& owner, unsigned worker, std::uint64_t token,
                sample_layout_message layout)
      : owner_{owner}, worker_{worker}, token_{token}, layout_{std::move(layout)} {}
  ~remote_staged() override {
    if (!written_) owner_.drop_staged(worker_, token_);
  }
  remote_staged(remote_staged const&) = delete;
  remote_staged& operator=(remote_staged const&) = delete;

  sample_spec spec() const override { return layout_.spec; }
  void write(sample_view out) override {
    written_ = true;
    owner_.write_staged(worker_, token_, out);
  }
  [[nodiscard]] sample_layout_message const& layout() const noexcept { return layout_; }

 private:
  process_dataset const& owner_;
  unsigned worker_;
  std::uint64_t token_;
  sample_layout_message layout_;
  bool written_ = false;
};

process_dataset::process_dataset(std::size_t size, unsigned workers, bool collate,
                                 std::size_t collate_budget, bool iterable)
    : size_{size},
      collate_{collate || iterable},
      iterable_{iterable},
      collate_budget_{collate_budget},
      arena_{std::make_shared<shared_arena>(arena_reserve_bytes())},
      control_{shared_mapping::create("gpufeed-mailboxes", control_bytes(std::max(workers, 1U)))} {
  if (size_ == 0) throw std::invalid_argument{"dataset: it is empty (len() is 0)"};
  auto const n = std::max(workers, 1U);
  control_.grow(control_bytes(n));
  for (unsigned w = 0; w < n; ++w) {
    auto l = std::make_unique<link>();
    l->id = w;
    l->box = new (control_.base() + w * sizeof(mailbox)) mailbox{};
    l->to_worker = file_descriptor{make_eventfd()};
    l->to_main = file_descriptor{make_eventfd()};
    links_.push_back(std::move(l));
  }
}

process_dataset::~process_dataset() = default;

process_dataset::worker_files process_dataset::files(unsigned worker) const {
  auto const& l = *links_.at(worker);
  return {control_.fd(), arena_->fd(), l.to_worker.get(), l.to_main.get()};
}

void process_dataset::attach(unsigned worker, int pid) {
  auto& l = *links_.at(worker);
  std::lock_guard const lock{l.mutex};
  l.pid = pid;
  l.pidfd = file_descriptor{open_pidfd(pid)};
}

void process_dataset::stop_workers() noexcept {
  // Released eventfds are closed, and their numbers may be another file's by now.
  if (released_.load(std::memory_order_acquire)) return;
  for (auto& l : links_) {
    l->box->stop.store(true, std::memory_order_release);
    try {
      signal_event(l->to_worker.get());
    } catch (...) {
      // a worker that cannot be woken is ended by the caller
    }
  }
}

void process_dataset::release_workers() noexcept {
  released_.store(true, std::memory_order_release);
  for (auto& l : links_) {
    std::lock_guard const lock{l->mutex};
    if (l->death.empty()) l->death = "gpufeed: the loader is closed";
    l->to_worker = file_descriptor{};
    l->to_main = file_descriptor{};
    l->pidfd = file_descriptor{};
  }
  control_.close_file();
  arena_->close_file();
}

// ---- tasks
// ----------------------------------------------------------------------------------------

template <class Write>
reply_status process_dataset::exchange(link& w, task_kind kind, Write const& write,
                                       std::string const& holding,
                                       std::atomic<bool> const* stop) const {
  if (!w.death.empty()) throw worker_error{w.death};
  auto const answered = [&] {
    return w.box->answered.load(std::memory_order_acquire) == w.sequence;
  };
  auto const await = [&](std::string const& what) {
    while (!answered()) {
      switch (wait_event(w.to_main.get(), w.pidfd.get(), stop_check_ms)) {
        case wait_result::ready:
          drain_event(w.to_main.get());
          break;
        case wait_result::peer_gone:
          if (!answered()) throw_dead(w, what);
          break;
        case wait_result::timed_out:
          if (w.pidfd.get() < 0 && w.pid > 0 && ::kill(w.pid, 0) != 0) throw_dead(w, what);
          if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
            throw worker_error{"gpufeed: the loader stopped while worker " + std::to_string(w.id) +
                               " was reading " + what};
          }
          break;
      }
    }
  };
  await("an earlier task");  // one abandoned when the loader stopped
  payload_writer out{std::span{w.box->payload, mailbox_payload_bytes}};
  write(out);
  w.box->kind = static_cast<std::uint32_t>(kind);
  w.box->status = 0;
  w.box->bytes = out.used();
  w.box->posted.store(++w.sequence, std::memory_order_release);
  signal_event(w.to_worker.get());
  await(holding);
  return static_cast<reply_status>(w.box->status);
}

void process_dataset::throw_dead(link& w, std::string const& holding) const {
  std::string how = "ended";
  std::string advice;
  siginfo_t info{};
  if (w.pid > 0 &&
      ::waitid(P_PID, static_cast<id_t>(w.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
      info.si_pid == w.pid) {
    if (info.si_code == CLD_EXITED) {
      how = "exited with status " + std::to_string(info.si_status);
    } else if (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED) {
      how = "was killed by signal " + std::to_string(info.si_status) + " (" +
            signal_name(info.si_status) + ")";
      if (info.si_status == SIGKILL) {
        advice =
            ". The kernel's out-of-memory killer ends processes with SIGKILL: check dmesg, "
            "and lower num_workers or the memory each sample takes";
      }
    }
  }
  w.death = "gpufeed: worker process " + std::to_string(w.id) + " (pid " + std::to_string(w.pid) +
            ") " + how + " while reading " + holding +
            "; the loader cannot go on (make a new one)" + advice;
  throw worker_error{w.death};
}

void process_dataset::throw_fatal(link& w) const {
  payload_reader in{std::span<std::byte const>{w.box->payload, w.box->bytes}};
  std::string text{in.get_bytes()};
  std::string pickled{in.get_bytes()};
  w.death = text;
  throw remote_worker_error{text, std::move(pickled)};
}

void process_dataset::send_layout(link& w, std::atomic<bool> const* stop) const {
  if (w.layout_sent) return;
  sample_layout_message layout;
  {
    std::lock_guard const lock{layout_mutex_};
    if (!layout_) throw logic_error{"gpufeed: a read before the layout was chosen"};
    layout = *layout_;
  }
  if (exchange(
          w, task_kind::layout, [&](payload_writer& out) { put_layout(out, layout); },
          "the batch layout", stop) == reply_status::fatal) {
    throw_fatal(w);
  }
  w.layout_sent = true;
}

void process_dataset::take_records(link& w, std::span<sample_view const> outs,
                                   std::span<std::size_t const> ids,
                                   std::span<std::exception_ptr> failures, std::size_t from) const {
  if (from > w.box->bytes) throw std::runtime_error{"gpufeed: a worker's reply is cut short"};
  payload_reader in{std::span<std::byte const>{w.box->payload + from, w.box->bytes - from}};
  auto const records = in.get<std::uint32_t>();
  for (std::uint32_t r = 0; r < records; ++r) {
    auto const kind = static_cast<record_kind>(in.get<std::uint8_t>());
    auto const k = in.get<std::uint32_t>();
    if (k >= outs.size()) throw std::runtime_error{"gpufeed: a worker's reply names no sample"};
    switch (kind) {
      case record_kind::text: {
        auto const field = in.get<std::uint32_t>();
        auto const value = in.get_bytes();
        if (field >= texts_.size() || !texts_[field]) {
          throw std::runtime_error{"gpufeed: a worker sent text for a field that holds none"};
        }
        try {
          auto const id = texts_[field]->intern(value, ids[k], outs[k].spec()[field].name);
          std::memcpy(outs[k].bytes(field).data(), &id, sizeof id);
        } catch (...) {
          if (!failures[k]) failures[k] = std::current_exception();
        }
        break;
      }
      case record_kind::python_error: {
        std::string text{in.get_bytes()};
        std::string pickled{in.get_bytes()};
        failures[k] = std::make_exception_ptr(remote_python_error{text, std::move(pickled)});
        break;
      }
      case record_kind::check_error:
        failures[k] = std::make_exception_ptr(std::invalid_argument{std::string{in.get_bytes()}});
        break;
      default:
        throw std::runtime_error{"gpufeed: a worker's reply holds an unknown record"};
    }
  }
}

void process_dataset::read_each(std::span<sample_read> reads) const {
  if (reads.empty()) return;
  auto const* stop = reads.front().context.stop;
  auto& w = *links_[reads.front().context.worker % links_.size()];
  std::lock_guard const lock{w.mutex};
  try {
    if (collate_) {
      collate_each(w, reads);
      return;
    }
    send_layout(w, stop);
    auto const fields = reads.front().out.fields();
    auto const status = exchange(
        w, task_kind::read,
        [&](payload_writer& out) {
          out.put<std::uint64_t>(reads.front().context.epoch);
          out.put<std::uint32_t>(static_cast<std::uint32_t>(reads.size()));
          out.put<std::uint32_t>(static_cast<std::uint32_t>(fields));
          for (auto const& r : reads) {
            out.put<std::uint64_t>(r.index);
            for (std::size_t f = 0; f < fields; ++f) {
              out.put<std::uint64_t>(arena_->offset_of(r.out.bytes(f).data()));
            }
          }
        },
        samples_text(reads), stop);
    if (status == reply_status::fatal) throw_fatal(w);
    std::vector<sample_view> outs;
    std::vector<std::size_t> ids;
    std::vector<std::exception_ptr> failures(reads.size());
    outs.reserve(reads.size());
    ids.reserve(reads.size());
    for (auto const& r : reads) {
      outs.push_back(r.out);
      ids.push_back(r.index);
    }
    take_records(w, outs, ids, failures);
    for (std::size_t k = 0; k < reads.size(); ++k) reads[k].failure = failures[k];
  } catch (worker_error const&) {
    throw;
  } catch (out_of_memory const&) {
    throw;  // the loader stops, saying what did not fit
  } catch (std::exception const& e) {
    // The channel itself failed (a message cut short, a system call): no sample's fault.
    w.death = std::string{"gpufeed: worker process "} + std::to_string(w.id) + ": " + e.what();
    throw worker_error{w.death};
  }
}

void process_dataset::read(std::size_t index, sample_view out, read_context const& ctx) const {
  sample_read one{index, out, ctx, nullptr};
  read_each(std::span{&one, 1});
  if (one.failure) std::rethrow_exception(one.failure);
}

std::unique_ptr<staged_sample> process_dataset::stage(std::size_t index,
                                                      read_context const& ctx) const {
  auto& w = *links_[ctx.worker % links_.size()];
  std::lock_guard const lock{w.mutex};
  auto const token = ++w.next_token;
  auto const holding = "sample " + std::to_string(index) + " of epoch " + std::to_string(ctx.epoch);
  if (exchange(
          w, task_kind::stage,
          [&](payload_writer& out) {
            out.put<std::uint64_t>(index).put<std::uint64_t>(ctx.epoch).put<std::uint64_t>(token);
          },
          holding, ctx.stop) == reply_status::fatal) {
    throw_fatal(w);
  }
  payload_reader in{std::span<std::byte const>{w.box->payload, w.box->bytes}};
  if (in.get<std::uint8_t>() == 0) {  // the read failed: one record says how
    auto const kind = static_cast<record_kind>(in.get<std::uint8_t>());
    std::string text{in.get_bytes()};
    if (kind == record_kind::python_error) {
      throw remote_python_error{text, std::string{in.get_bytes()}};
    }
    throw std::invalid_argument{text};
  }
  auto layout = get_layout(in);
  return std::make_unique<remote_staged>(*this, w.id, token, std::move(layout));
}

void process_dataset::layout_chosen(staged_sample const& first) const {
  auto const* remote = dynamic_cast<remote_staged const*>(&first);
  if (remote == nullptr) throw logic_error{"gpufeed: a staged sample of another dataset"};
  std::lock_guard const lock{layout_mutex_};
  layout_ = remote->layout();
  texts_.clear();
  for (auto const kind : layout_->kinds) {
    if (kind == sample_tree::leaf_kind::array) {
      texts_.push_back(nullptr);
    } else {
      texts_.push_back(std::make_unique<text_values>(kind == sample_tree::leaf_kind::bytes,
                                                     size_ + text_values_beyond_length));
    }
  }
}

void process_dataset::write_staged(unsigned worker, std::uint64_t token, sample_view out) const {
  auto& w = *links_.at(worker);
  std::lock_guard const lock{w.mutex};
  send_layout(w, nullptr);
  auto const fields = out.fields();
  if (exchange(
          w, task_kind::write_staged,
          [&](payload_writer& msg) {
            msg.put<std::uint64_t>(token).put<std::uint32_t>(static_cast<std::uint32_t>(fields));
            for (std::size_t f = 0; f < fields; ++f) {
              msg.put<std::uint64_t>(arena_->offset_of(out.bytes(f).data()));
            }
          },
          "a staged sample", nullptr) == reply_status::fatal) {
    throw_fatal(w);
  }
  std::exception_ptr failure;
  std::size_t const none = 0;
  take_records(w, std::span{&out, 1}, std::span{&none, 1}, std::span{&failure, 1});
  if (failure) std::rethrow_exception(failure);
}

void process_dataset::drop_staged(unsigned worker, std::uint64_t token) const noexcept {
  try {
    auto& w = *links_.at(worker);
    std::lock_guard const lock{w.mutex};
    if (!w.death.empty()) return;
    std::atomic<bool> const give_up{true};  // a worker busy elsewhere keeps it: no wait
    (void)exchange(
        w, task_kind::drop_staged, [&](payload_writer& out) { out.put<std::uint64_t>(token); },
        "a staged sample", &give_up);
  } catch (...) {
    // it goes with the worker
  }
}

void process_dataset::collate_each(link& w, std::span<sample_read> reads) const {
  auto const* stop = reads.front().context.stop;
  auto const* slot = reads.front().out.bytes(0).data();
  block_of_slot block;
  {
    std::lock_guard const lock{blocks_mutex_};
    block = blocks_[slot];
  }
  auto const holding = samples_text(reads);
  auto const grow_to = [&](std::size_t need) {
    std::lock_guard const lock{blocks_mutex_};
    auto const capacity = std::max(need, largest_batch_ + largest_batch_ / 4);
    if (collate_budget_ > 0 && block_bytes_ + capacity > collate_budget_) {
      throw out_of_memory{
          "gpufeed: collate_fn's batches take " + std::to_string(block_bytes_) +
          " bytes of blocks already, and a batch of " + std::to_string(need) +
          " bytes needs one more, over the budget of " + std::to_string(collate_budget_) +
          " bytes (held_batches_budget); raise held_batches_budget, or make smaller batches"};
    }
    block.offset = arena_->block(capacity);
    block.capacity = capacity;
    block_bytes_ += capacity;
  };
  auto const post = [&](task_kind kind) {
    return exchange(
        w, kind,
        [&](payload_writer& out) {
          out.put<std::uint64_t>(reads.front().context.epoch);
          out.put<std::uint64_t>(block.offset).put<std::uint64_t>(block.capacity);
          if (kind == task_kind::collate) {
            out.put<std::uint32_t>(static_cast<std::uint32_t>(reads.size()));
            for (auto const& r : reads) out.put<std::uint64_t>(r.index);
          }
        },
        holding, stop);
  };
  auto status = post(task_kind::collate);
  for (int attempt = 0;; ++attempt) {
    if (status == reply_status::fatal) throw_fatal(w);
    payload_reader in{std::span<std::byte const>{w.box->payload, w.box->bytes}};
    auto const result = static_cast<collate_result>(in.get<std::uint8_t>());
    if (result == collate_result::written || result == collate_result::ended) {
      bool const ended = result == collate_result::ended;
      block.used = ended ? 0 : static_cast<std::size_t>(in.get<std::uint64_t>());
      block.ended = ended;
      block.worker = w.id;
      std::lock_guard const lock{blocks_mutex_};
      blocks_[slot] = block;
      largest_batch_ = std::max(largest_batch_, block.used);
      return;
    }
    if (result == collate_result::failed) {
      // The batch is made whole or not at all: its one failure is every sample's.
      std::exception_ptr failure;
      std::vector<sample_view> outs{reads.front().out};
      std::vector<std::size_t> ids{reads.front().index};
      std::span<std::exception_ptr> one{&failure, 1};
      take_records(w, outs, ids, one, sizeof(std::uint8_t));  // after the result
      for (auto& r : reads) r.failure = failure;
      return;
    }
    if (attempt > 0) {
      throw std::runtime_error{"a worker asked twice for a larger block"};
    }
    grow_to(static_cast<std::size_t>(in.get<std::uint64_t>()));
    status = post(task_kind::collate_write);
  }
}

process_dataset::collated process_dataset::collated_batch(std::byte const* slot) const {
  std::lock_guard const lock{blocks_mutex_};
  auto const found = blocks_.find(slot);
  if (found == blocks_.end()) {
    throw std::out_of_range{"gpufeed: no batch was collated into this slot"};
  }
  auto const& b = found->second;
  return {arena_->at(b.offset), b.used, b.ended, b.worker};
}

}  // namespace gpufeed::python::workers
