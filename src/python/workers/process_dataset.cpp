#include "python/workers/process_dataset.hpp"

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

#include "core/host_resources.hpp"
#include "python/samples/text_table.hpp"
#include "python/threads/gil.hpp"
#include "python/workers/process_link.hpp"
#include "python/workers/text_values.hpp"

namespace gpufeed::python::workers {

namespace {
// The most address space the ring may take: twice the machine's memory, at least 64 GiB (it
// costs nothing until written).
std::size_t arena_reserve_bytes() {
  auto const physical = detail::physical_memory_bytes();
  return std::max<std::size_t>(std::size_t{64} << 30, 2 * physical);
}

std::string signal_name(int signal) {
  char const* abbrev = ::sigabbrev_np(signal);
  return abbrev != nullptr ? std::string{"SIG"} + abbrev : std::to_string(signal);
}
}  // namespace

// A sample a worker process read and keeps until it can be written.
class remote_staged final : public detail::staged_sample {
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
  if (size_ == 0 && !iterable_) throw std::invalid_argument{"dataset: it is empty (len() is 0)"};
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
  std::lock_guard const lock{attach_mutex_};
  if (released_.load(std::memory_order_acquire)) {
    throw logic_error{"gpufeed: a worker process attached after the loader was closed"};
  }
  l.pidfd_owner = file_descriptor{open_pidfd(pid)};
  l.pidfd.store(l.pidfd_owner.get(), std::memory_order_release);
  l.pid.store(pid, std::memory_order_release);
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
  std::lock_guard const attaching{attach_mutex_};
  released_.store(true, std::memory_order_release);
  for (auto& l : links_) {
    std::lock_guard const lock{l->mutex};
    if (!l->death)
      l->death = std::make_exception_ptr(worker_error{"gpufeed: the loader is closed"});
    l->to_worker = file_descriptor{};
    l->to_main = file_descriptor{};
    l->pidfd.store(-1, std::memory_order_release);
    l->pidfd_owner = file_descriptor{};
  }
  control_.close_file();
  arena_->close_file();
}

// ---- tasks
// ----------------------------------------------------------------------------------------

std::string held_text(held_samples const& held) {
  if (held.indices.empty()) return held.task;
  std::string text = held.indices.size() == 1 ? "sample " : "samples ";
  for (std::size_t k = 0; k < held.indices.size(); ++k) {
    text += (k == 0 ? "" : ", ") + std::to_string(held.indices[k]);
  }
  return text + " of epoch " + std::to_string(held.epoch);
}

namespace {
// What C++ callers see; Python formats its own from the fields (gpufeed.WorkerError.died).
std::string death_text(unsigned worker, int pid, worker_death::ending how, int code,
                       held_samples const& held) {
  std::string ended = "ended";
  std::string advice;
  if (how == worker_death::ending::exited) {
    ended = "exited with status " + std::to_string(code);
  } else if (how == worker_death::ending::killed) {
    ended = "was killed by signal " + std::to_string(code) + " (" + signal_name(code) + ")";
    if (code == SIGKILL) {
      advice =
          ". The kernel's out-of-memory killer ends processes with SIGKILL: check dmesg, "
          "and lower num_workers or the memory each sample takes";
    }
  }
  return "gpufeed: worker process " + std::to_string(worker) + " (pid " + std::to_string(pid) +
         ") " + ended + " while reading " + held_text(held) +
         "; the loader cannot go on (make a new one)" + advice;
}
}  // namespace

worker_death::worker_death(unsigned worker, int pid, ending how, int code, held_samples held)
    : worker_error{death_text(worker, pid, how, code, held)},
      worker_{worker},
      pid_{pid},
      how_{how},
      code_{code},
      held_{std::move(held)} {}

void process_dataset::fail(link& w, std::exception_ptr failure) {
  w.death = failure;
  std::rethrow_exception(std::move(failure));
}

void process_dataset::throw_dead(link& w, held_samples const& holding) const {
  auto how = worker_death::ending::unknown;
  int code = 0;
  siginfo_t info{};
  auto const pid = w.pid.load(std::memory_order_acquire);
  if (pid > 0 && ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
      info.si_pid == pid) {
    if (info.si_code == CLD_EXITED) {
      how = worker_death::ending::exited;
      code = info.si_status;
    } else if (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED) {
      how = worker_death::ending::killed;
      code = info.si_status;
    }
  }
  fail(w, std::make_exception_ptr(worker_death{w.id, pid, how, code, holding}));
}

void process_dataset::throw_fatal(link& w) const {
  payload_reader in{std::span<std::byte const>{w.box->payload, w.box->bytes}};
  std::string text{in.get_bytes()};
  std::string pickled{in.get_bytes()};
  w.death = std::make_exception_ptr(worker_error{text});
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
          held_samples{{}, 0, "the batch layout"}, stop) == reply_status::fatal) {
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

void process_dataset::read_each(std::span<detail::sample_read> reads) const {
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
        held_by(reads), stop);
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
    fail(w, std::make_exception_ptr(worker_error{std::string{"gpufeed: worker process "} +
                                                 std::to_string(w.id) + ": " + e.what()}));
  }
}

void process_dataset::read(std::size_t index, sample_view out, read_context const& ctx) const {
  detail::sample_read one{index, out, ctx, nullptr};
  read_each(std::span{&one, 1});
  if (one.failure) std::rethrow_exception(one.failure);
}

std::unique_ptr<detail::staged_sample> process_dataset::stage(std::size_t index,
                                                              read_context const& ctx) const {
  auto& w = *links_[ctx.worker % links_.size()];
  std::lock_guard const lock{w.mutex};
  auto const token = ++w.next_token;
  held_samples const holding{{index}, ctx.epoch, {}};
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

void process_dataset::layout_chosen(detail::staged_sample const& first) const {
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
          held_samples{{}, 0, "a staged sample"}, nullptr) == reply_status::fatal) {
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
    if (w.death) return;
    std::atomic<bool> const give_up{true};  // a worker busy elsewhere keeps it: no wait
    (void)exchange(
        w, task_kind::drop_staged, [&](payload_writer& out) { out.put<std::uint64_t>(token); },
        held_samples{{}, 0, "a staged sample"}, &give_up);
  } catch (...) {
    // it goes with the worker
  }
}

}  // namespace gpufeed::python::workers
