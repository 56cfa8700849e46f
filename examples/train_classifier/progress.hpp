#pragma once
// The live progress line of a training run: redrawn in place on a terminal, a plain line every
// few seconds elsewhere (a log, a pipe, ctest).

#include <gpufeed/observe/monitor.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

namespace train_classifier {

/// Where a run stands; the rates are since the run's start.
struct progress_state {
  std::string feed;
  std::size_t epoch = 0;  ///< 1-based
  std::size_t epochs = 0;
  std::size_t batch = 0;  ///< batches of this epoch so far
  std::size_t batches = 0;
  double samples_per_s = 0;
  double wait_share = 0;  ///< time blocked waiting for data / wall time, 0-1
  double loss = 0;        ///< mean loss of this epoch so far
  double accuracy = 0;    ///< training accuracy of this epoch so far, 0-1
};

/// Draws progress lines on stdout. With `watch_gpu`, a gpufeed::system_monitor samples the GPU's
/// utilization and memory, and the line shows them.
class progress_printer {
 public:
  explicit progress_printer(bool watch_gpu);
  ~progress_printer();
  progress_printer(progress_printer const&) = delete;
  progress_printer& operator=(progress_printer const&) = delete;
  progress_printer(progress_printer&&) = delete;
  progress_printer& operator=(progress_printer&&) = delete;

  /// Whether a line is due (so that callers gather its values only then).
  [[nodiscard]] bool due() const;
  /// Draws the line (in place on a terminal).
  void draw(progress_state const& state);
  /// Ends a drawn line and prints `line` on its own (and copies it to the log, if any).
  void print(std::string const& line);
  /// Also writes every line printed with print() to `log` (which must outlive the printer).
  void copy_to(std::ostream* log) noexcept { log_ = log; }
  /// The GPU's latest utilization, 0-100, when a GPU is watched and has reported.
  [[nodiscard]] std::optional<double> gpu_percent() const;

 private:
  [[nodiscard]] std::string gpu_text() const;

  bool tty_;
  bool drawn_ = false;
  std::chrono::steady_clock::duration interval_;
  std::chrono::steady_clock::time_point last_;
  std::unique_ptr<gpufeed::system_monitor> monitor_;
  std::ostream* log_ = nullptr;
};

}  // namespace train_classifier
