#pragma once
// One worker process's link to the loader (its mailbox, event files and process) and the
// exchange of one task over it: what process_dataset's reads (process_dataset.cpp) and a
// collate_fn's batches (process_collate.cpp) share.

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <span>
#include <string>

#include "python/workers/mailbox.hpp"
#include "python/workers/process_dataset.hpp"
#include "python/workers/shared_memory.hpp"

namespace gpufeed::python::workers {

// How often a wait for a worker checks whether the loader stopped (a death is seen at once).
inline constexpr int stop_check_ms = 100;

/// The samples of a task, for a death's account.
inline held_samples held_by(std::span<detail::sample_read const> reads) {
  held_samples held;
  held.indices.reserve(reads.size());
  for (auto const& r : reads) held.indices.push_back(r.index);
  held.epoch = reads.front().context.epoch;
  return held;
}

struct process_dataset::link {
  unsigned id = 0;
  mailbox* box = nullptr;
  file_descriptor to_worker;
  file_descriptor to_main;
  // The process, once attached. Workers start when the loader is first iterated, and a task
  // posted before waits for its reply with the link's mutex held: attach() publishes the pid
  // and its pidfd without that mutex, and the wait reads them afresh each time it wakes.
  std::atomic<int> pid{-1};
  std::atomic<int> pidfd{-1};
  file_descriptor pidfd_owner;  // closes pidfd; written by attach() and release_workers() only
  std::mutex mutex;             // one task at a time
  std::uint64_t sequence = 0;
  bool layout_sent = false;
  std::uint64_t next_token = 0;
  std::exception_ptr death;  // how it ended, once it did: every later task throws it again
};

template <class Write>
reply_status process_dataset::exchange(link& w, task_kind kind, Write const& write,
                                       held_samples const& holding,
                                       std::atomic<bool> const* stop) const {
  if (w.death) std::rethrow_exception(w.death);
  auto const answered = [&] {
    return w.box->answered.load(std::memory_order_acquire) == w.sequence;
  };
  auto const await = [&](held_samples const& what) {
    while (!answered()) {
      switch (wait_event(w.to_main.get(), w.pidfd.load(std::memory_order_acquire), stop_check_ms)) {
        case wait_result::ready:
          drain_event(w.to_main.get());
          break;
        case wait_result::peer_gone:
          if (!answered()) throw_dead(w, what);
          break;
        case wait_result::timed_out:
          if (auto const pid = w.pid.load(std::memory_order_acquire);
              w.pidfd.load(std::memory_order_acquire) < 0 && pid > 0 && ::kill(pid, 0) != 0) {
            throw_dead(w, what);
          }
          if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
            throw worker_error{"gpufeed: the loader stopped while worker " + std::to_string(w.id) +
                               " was reading " + held_text(what)};
          }
          break;
      }
    }
  };
  await(held_samples{{}, 0, "an earlier task"});  // one abandoned when the loader stopped
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

}  // namespace gpufeed::python::workers
