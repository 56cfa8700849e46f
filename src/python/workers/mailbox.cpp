#include "python/workers/mailbox.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "python/workers/shared_memory.hpp"

namespace gpufeed::python::workers {

void signal_event(int eventfd) {
  std::uint64_t const one = 1;
  while (::write(eventfd, &one, sizeof one) < 0) {
    if (errno != EINTR) {
      throw_errno("gpufeed: waking a worker (eventfd write)");
    }
  }
}

void drain_event(int eventfd) {
  std::uint64_t count = 0;
  while (::read(eventfd, &count, sizeof count) < 0) {
    if (errno == EAGAIN) {
      return;
    }
    if (errno != EINTR) {
      throw_errno("gpufeed: reading a worker's wake-up (eventfd read)");
    }
  }
}

wait_result wait_event(int eventfd, int pidfd, int timeout_ms) {
  pollfd fds[2] = {{eventfd, POLLIN, 0}, {pidfd, POLLIN, 0}};
  nfds_t const count = pidfd >= 0 ? 2 : 1;
  for (;;) {
    int const n = ::poll(fds, count, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw_errno("gpufeed: waiting for a worker (poll)");
    }
    if (n == 0) {
      return wait_result::timed_out;
    }
    if ((fds[0].revents & POLLIN) != 0) {
      return wait_result::ready;  // seen before a death: the reply came first
    }
    if (count == 2 && fds[1].revents != 0) {
      return wait_result::peer_gone;
    }
    return wait_result::timed_out;  // a spurious wake-up
  }
}

int make_eventfd() {
  int const fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) {
    throw_errno("gpufeed: eventfd");
  }
  return fd;
}

int open_pidfd(int pid) noexcept {
#ifdef SYS_pidfd_open
  auto const fd = ::syscall(SYS_pidfd_open, pid, 0);
  return fd < 0 ? -1 : static_cast<int>(fd);
#else
  (void)pid;
  return -1;
#endif
}

}  // namespace gpufeed::python::workers
