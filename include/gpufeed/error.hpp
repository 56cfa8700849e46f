#pragma once
/// @file
/// @brief The exceptions gpufeed throws and the macros that throw them.
///
/// Every gpufeed exception derives from a standard exception type, so `catch (std::exception&)`
/// sees them all. Messages say what went wrong and what to change.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpufeed {

/// @brief A caller broke a precondition: bad options, a bad shape, a misuse of the API.
class logic_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// @brief Memory (host, pinned or device) could not be allocated.
class out_of_memory : public std::bad_alloc {
 public:
  explicit out_of_memory(std::string message) : message_{std::move(message)} {}
  /// @brief The reason, with the size that was asked for.
  [[nodiscard]] char const* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

/// @brief A dataset's exception that names the file it was reading.
///
/// Datasets throw this (or anything else) from `dataset::read`; when it is a `file_error`, the
/// `sample_error` the consumer receives carries the file's path.
class file_error : public std::runtime_error {
 public:
  /// @param path the file being read. @param message what went wrong with it.
  file_error(std::string path, std::string const& message)
      : std::runtime_error{path + ": " + message}, path_{std::move(path)} {}
  /// @brief The file that could not be read.
  [[nodiscard]] std::string const& path() const noexcept { return path_; }

 private:
  std::string path_;
};

/// @brief A worker cannot go on (a worker process died, or its channel broke): the loader
/// stops, and every later call of the consumer throws this error again.
///
/// A dataset throws it from `read`, `read_each` or `stage` for failures that are not the
/// sample's; its message names the worker, what happened to it and the samples it held.
class worker_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// @brief One sample that could not be read: what a `sample_error` says about each.
struct sample_failure {
  std::size_t index = 0;     ///< the sample's index in the dataset
  std::uint64_t epoch = 0;   ///< the epoch being read
  unsigned worker = 0;       ///< the worker thread that read it
  std::string file;          ///< the file the dataset named (a `file_error`), or empty
  std::string message;       ///< the dataset's own message
  std::exception_ptr cause;  ///< the dataset's exception
};

/// @brief Samples could not be read. Carries each failed sample of the batch (`failures()`, in
/// batch order): its index, epoch and worker, the file where the dataset named one, its message
/// and the dataset's original exception. `index()`, `epoch()`, `worker()`, `file()` and the nested
/// exception (reach it with `std::rethrow_if_nested`) are the first failed sample's; `what()`
/// names every failed sample (the first 8 of a larger number, and how many more).
///
/// Construct it only inside a `catch` block: it captures the exception being handled as the
/// nested one (for a batch, the first failure's cause).
class sample_error : public std::runtime_error, public std::nested_exception {
 public:
  /// @brief One failed sample.
  /// @param index the sample's index in the dataset. @param epoch the epoch being read.
  /// @param worker the worker thread that read it. @param message the dataset's message.
  /// @param file the file the dataset was reading, or empty.
  sample_error(std::size_t index, std::uint64_t epoch, unsigned worker, std::string const& message,
               std::string file);
  /// @brief Every failed sample of one batch (at least one), in batch order.
  /// @throws std::invalid_argument if `failures` is empty.
  explicit sample_error(std::vector<sample_failure> failures);
  [[nodiscard]] std::size_t index() const noexcept { return failures_.front().index; }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return failures_.front().epoch; }
  [[nodiscard]] unsigned worker() const noexcept { return failures_.front().worker; }
  /// @brief The file the dataset named, or an empty string.
  [[nodiscard]] std::string const& file() const noexcept { return failures_.front().file; }
  /// @brief Every failed sample of the batch, in batch order (one for a single failure).
  [[nodiscard]] std::span<sample_failure const> failures() const noexcept { return failures_; }

 private:
  std::vector<sample_failure> failures_;  // never empty (the constructors refuse it)
};

/// @brief A batch did not arrive within `loader_options::timeout`. Names the sample that is late.
class timeout_error : public std::runtime_error {
 public:
  /// @param index the late sample's index. @param message the whole explanation.
  timeout_error(std::size_t index, std::string const& message)
      : std::runtime_error{message}, index_{index} {}
  /// @brief The index of the sample the batch is waiting for.
  [[nodiscard]] std::size_t index() const noexcept { return index_; }

 private:
  std::size_t index_;
};

namespace detail {
[[noreturn]] void throw_logic_error(char const* condition, std::string const& message,
                                    char const* file, int line);
}  // namespace detail

}  // namespace gpufeed

/// @brief Throws `gpufeed::logic_error` with `message` (a std::string expression) when `cond` is
/// false.
#define GPUFEED_EXPECTS(cond, message)                                            \
  do {                                                                            \
    if (!(cond)) {                                                                \
      ::gpufeed::detail::throw_logic_error(#cond, (message), __FILE__, __LINE__); \
    }                                                                             \
  } while (false)
