#include "python/workers/parent_watch.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>

#include "python/workers/mailbox.hpp"

namespace gpufeed::python::workers {

namespace {
// How often a watch without a pidfd checks that the loader's process still runs.
constexpr int check_ms = 1000;
// The status of a worker that ended because the loader's process was gone.
constexpr int parent_gone_status = 1;
}  // namespace

parent_watch::parent_watch(int main_pid)
    : main_pid_{main_pid}, stop_{make_eventfd()}, pidfd_{open_pidfd(main_pid)} {
  thread_ = std::thread{[this] {
    try {
      for (;;) {
        auto const result = wait_event(stop_.get(), pidfd_.get(), pidfd_ ? -1 : check_ms);
        if (result == wait_result::ready) {
          return;
        }
        if (result == wait_result::peer_gone || ::kill(main_pid_, 0) != 0) {
          // Nothing of this process is needed any more, and its Python state may be in the
          // middle of anything: end without running exit handlers.
          ::_exit(parent_gone_status);
        }
      }
    } catch (std::exception const&) {  // a wait that failed: the loop's own checks remain
    }
  }};
}

parent_watch::~parent_watch() {
  try {
    signal_event(stop_.get());
  } catch (std::exception const&) {  // the thread then ends with the process
    thread_.detach();
    return;
  }
  thread_.join();
}

}  // namespace gpufeed::python::workers
