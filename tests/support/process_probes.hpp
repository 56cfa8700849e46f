#pragma once
// Process probes (Linux): threads (/proc/self/task), open fds (/proc/self/fd), RSS (VmRSS); a
// bounded wait for a state; an environment variable set for a scope.

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

namespace gpufeed::test {

inline std::size_t count_entries(char const* dir) {
  std::size_t n = 0;
  for (auto const& e : std::filesystem::directory_iterator{dir}) {
    (void)e;
    ++n;
  }
  return n;
}

/// Threads of this process.
inline std::size_t thread_count() {
  return count_entries("/proc/self/task");
}
/// Open file descriptors of this process (including the one used to list them).
inline std::size_t fd_count() {
  return count_entries("/proc/self/fd");
}
/// Resident set size in bytes (VmRSS).
inline std::size_t rss_bytes() {
  std::ifstream status{"/proc/self/status"};
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream in{line.substr(6)};
      std::size_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

/// Polls `done` every millisecond until it holds or `limit` passes; returns its last value.
/// (A bounded wait for a state, never a timing assertion.)
template <class Predicate>
bool eventually(Predicate done, std::chrono::milliseconds limit = std::chrono::seconds{20}) {
  auto const deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
  return true;
}

/// Waits until the process has at most `baseline` threads again (exited threads can linger in
/// /proc for a moment after join); returns the count seen last.
inline std::size_t threads_settled_to(std::size_t baseline) {
  std::size_t seen = thread_count();
  (void)eventually([&] { return (seen = thread_count()) <= baseline; }, std::chrono::seconds{10});
  return seen;
}

/// Sets (or unsets) an environment variable for the lifetime of the guard.
class env_guard {
 public:
  env_guard(char const* name, std::optional<std::string> value) : name_{name} {
    if (char const* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~env_guard() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  env_guard(env_guard const&) = delete;
  env_guard& operator=(env_guard const&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace gpufeed::test
