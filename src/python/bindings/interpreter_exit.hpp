#pragma once
// Loaders and interpreter exit. Python must not go away under a loader's workers (a worker
// entering Python during finalization is ended inside C++ code), so exit closes every open
// loader first; a thread still waiting in next() at exit parks instead of taking the GIL back;
// and a loader dropped on one of its own worker threads is stopped by another thread.

#include <memory>

#include "gpufeed/loader.hpp"

namespace gpufeed::python {

/// What interpreter exit closes.
class closes_at_exit {
 public:
  virtual ~closes_at_exit() = default;
  virtual void close() = 0;
};

/// Interpreter exit will close `l` if it is still alive then (weakly held: a loader dropped
/// meanwhile is simply gone; one being closed at exit is kept alive by the closer).
void close_at_exit(std::shared_ptr<closes_at_exit> const& l);

/// Whether this thread, waiting in next() with the GIL released, must park rather than take the
/// GIL back: after exit began, on any thread but the exiting one (Python ends threads that take
/// the GIL once it finalizes, by an unwind through C++ frames that cannot be caught). The
/// exiting thread never parks: an atexit hook of the user's may still call next().
[[nodiscard]] bool must_park() noexcept;
/// Never returns: the thread dies with the process.
[[noreturn]] void park_forever();

/// Stops `l` on a new thread (for a loader dropped on one of its own worker threads, which
/// cannot join itself: Python's garbage collector runs wherever Python allocates, so it can
/// drop a loader in a reference cycle inside its own dataset's __getitem__). Exit waits for it.
void stop_elsewhere(loader&& l);

/// Closes every open loader and waits for the stops under way (the GIL held on entry).
void close_all();

/// The atexit hook: marks exit as begun on this thread, then close_all().
void at_exit();

}  // namespace gpufeed::python
