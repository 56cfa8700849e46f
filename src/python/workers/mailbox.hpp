#pragma once
// One worker process's mailbox, in the control region that the loader's process and the workers
// map together (shared_memory.hpp). The loader posts one task at a time and waits for the reply,
// which the worker writes over the task in the same payload area. Each side wakes the other
// through an eventfd (no polling), and sees the other die through a pidfd: a wait never outlives
// the process it waits for.
//
// Tasks and replies are flat byte records (payload_writer / payload_reader), bounds-checked on
// both sides: a record that does not fit is an error naming what did not fit, never an overrun.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace gpufeed::python::workers {

/// What the loader asks of a worker.
enum class task_kind : std::uint32_t {
  read = 1,       ///< read a claim's samples into their slots
  stage,          ///< read a sample and keep it (the layout is not known yet); reply its layout
  write_staged,   ///< write a kept sample into its slot
  drop_staged,    ///< forget a kept sample
  layout,         ///< the loader's layout (spec and structure): before any read or write
  collate,        ///< read a batch's samples, call collate_fn, write its output into a block
  collate_write,  ///< write the output the last collate kept into a larger block
};

/// How a collate task ended (the first byte of its reply).
enum class collate_result : std::uint8_t {
  written = 0,  ///< the output is in the block: its bytes follow
  larger = 1,   ///< the output needs a block of the bytes that follow (it is kept)
  failed = 2,   ///< a record says why (the whole batch fails)
  ended = 3,    ///< an iterable dataset's iterator in this worker has no more samples this epoch
};

/// How a task ended, as a whole (a claim's samples fail one by one inside an `ok` reply).
enum class reply_status : std::uint32_t {
  ok = 0,
  fatal = 1,  ///< the worker cannot go on (worker_init_fn raised, a broken layout): its record
};

/// One record of a reply.
enum class record_kind : std::uint8_t {
  text = 1,          ///< a text leaf's bytes: sample, field
  python_error = 2,  ///< the dataset raised: sample; a pickled (type, message)
  check_error = 3,   ///< gpufeed refused the sample (dtype, shape, structure): sample; message
};

inline constexpr std::size_t mailbox_payload_bytes = std::size_t{1} << 20;

struct mailbox {
  alignas(64) std::atomic<std::uint64_t> posted{0};    // the last task's number (loader writes)
  alignas(64) std::atomic<std::uint64_t> answered{0};  // the last reply's number (worker writes)
  // Set by the loader when it closes: the worker leaves its loop after the task in hand (which
  // may be one the loader gave up waiting for), without a reply.
  alignas(64) std::atomic<bool> stop{false};
  std::uint32_t kind = 0;    // task_kind
  std::uint32_t status = 0;  // reply_status
  std::uint64_t bytes = 0;   // the task's, then the reply's, payload
  alignas(64) std::byte payload[mailbox_payload_bytes];
};
static_assert(std::is_standard_layout_v<mailbox>);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "the mailbox's counters are shared between processes: they must be lock-free");

/// Bytes of the control region for `workers` mailboxes.
[[nodiscard]] constexpr std::size_t control_bytes(std::size_t workers) noexcept {
  return workers * sizeof(mailbox);
}

/// A payload that does not fit its mailbox.
class payload_overflow : public std::length_error {
 public:
  using std::length_error::length_error;
};

/// Appends records to a payload area.
class payload_writer {
 public:
  explicit payload_writer(std::span<std::byte> area) noexcept : area_{area} {}

  template <class T>
  payload_writer& put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::memcpy(room(sizeof value, "a number"), &value, sizeof value);
    used_ += sizeof value;
    return *this;
  }
  payload_writer& put_bytes(std::string_view bytes) {
    put<std::uint64_t>(bytes.size());
    std::memcpy(room(bytes.size(), "a value"), bytes.data(), bytes.size());
    used_ += bytes.size();
    return *this;
  }
  [[nodiscard]] std::size_t used() const noexcept { return used_; }
  [[nodiscard]] std::size_t room_left() const noexcept { return area_.size() - used_; }

 private:
  std::byte* room(std::size_t bytes, char const* what) {
    if (bytes > area_.size() - used_) {
      throw payload_overflow{std::string{"gpufeed: "} + what + " of " + std::to_string(bytes) +
                             " bytes does not fit a worker's mailbox (" +
                             std::to_string(area_.size() - used_) + " bytes left of " +
                             std::to_string(area_.size()) + ")"};
    }
    return area_.data() + used_;
  }
  std::span<std::byte> area_;
  std::size_t used_ = 0;
};

/// Reads records back, checking every length against the payload.
class payload_reader {
 public:
  explicit payload_reader(std::span<std::byte const> area) noexcept : area_{area} {}

  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    std::memcpy(&value, take(sizeof value), sizeof value);
    return value;
  }
  std::string_view get_bytes() {
    auto const n = get<std::uint64_t>();
    auto const* p = take(n);
    return {reinterpret_cast<char const*>(p), static_cast<std::size_t>(n)};
  }
  [[nodiscard]] bool done() const noexcept { return used_ == area_.size(); }

 private:
  std::byte const* take(std::uint64_t bytes) {
    if (bytes > area_.size() - used_) {
      throw std::runtime_error{"gpufeed: a worker's message is cut short (" +
                               std::to_string(bytes) + " bytes wanted, " +
                               std::to_string(area_.size() - used_) + " left)"};
    }
    auto const* p = area_.data() + used_;
    used_ += static_cast<std::size_t>(bytes);
    return p;
  }
  std::span<std::byte const> area_;
  std::size_t used_ = 0;
};

/// Wakes the other side through an eventfd. @throws std::system_error.
void signal_event(int eventfd);
/// Clears an eventfd's count (non-blocking). @throws std::system_error.
void drain_event(int eventfd);

/// What a wait for the other side found.
enum class wait_result : std::uint8_t { ready, timed_out, peer_gone };
/// Waits up to `timeout_ms` (-1: no limit) for `eventfd` to be signalled or the process behind
/// `pidfd` (-1: none) to end. @throws std::system_error.
[[nodiscard]] wait_result wait_event(int eventfd, int pidfd, int timeout_ms);

/// A new eventfd (close-on-exec, non-blocking). @throws std::system_error.
[[nodiscard]] int make_eventfd();
/// A pidfd for process `pid`, or -1 where the kernel has none (Linux < 5.3).
[[nodiscard]] int open_pidfd(int pid) noexcept;

}  // namespace gpufeed::python::workers
