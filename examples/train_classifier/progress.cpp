#include "progress.hpp"

#include <unistd.h>
#include <gpufeed/observe/progress.hpp>

#include <array>
#include <cstdio>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>

namespace train_classifier {

progress_printer::progress_printer(bool watch_gpu)
    : tty_{isatty(STDOUT_FILENO) != 0},
      interval_{tty_ ? std::chrono::milliseconds{250} : std::chrono::milliseconds{5000}},
      last_{std::chrono::steady_clock::now()} {
  if (watch_gpu) {
    monitor_ = std::make_unique<gpufeed::system_monitor>(
        gpufeed::monitor_options{.interval = std::chrono::milliseconds{500}});
  }
}

progress_printer::~progress_printer() {
  if (drawn_) std::cout << std::endl;
}

bool progress_printer::due() const {
  return std::chrono::steady_clock::now() - last_ >= interval_;
}

void progress_printer::draw(progress_state const& s) {
  last_ = std::chrono::steady_clock::now();
  std::array<char, 256> text{};
  std::snprintf(text.data(), text.size(),
                "[%s] epoch %zu/%zu batch %zu/%zu | %.0f samples/s | data wait %.1f%% | loss "
                "%.3f | train acc %.1f%%",
                s.feed.c_str(), s.epoch, s.epochs, s.batch, s.batches, s.samples_per_s,
                100 * s.wait_share, s.loss, 100 * s.accuracy);
  std::string const line = text.data() + gpu_text();
  if (tty_) {
    std::cout << '\r' << line << "\033[K" << std::flush;
    drawn_ = true;
  } else {
    std::cout << line << '\n' << std::flush;
  }
}

void progress_printer::print(std::string const& line) {
  if (drawn_) std::cout << "\r\033[K";
  drawn_ = false;
  std::cout << line << '\n' << std::flush;
  if (log_ != nullptr) *log_ << line << '\n' << std::flush;
}

std::optional<double> progress_printer::gpu_percent() const {
  if (!monitor_) return std::nullopt;
  auto const sample = monitor_->latest();
  if (!sample) return std::nullopt;
  return sample->gpu_percent;
}

std::string progress_printer::gpu_text() const {
  if (!monitor_) return {};
  auto const sample = monitor_->latest();
  if (!sample) return " | GPU n/a";
  return " | GPU " + gpufeed::format_percent(sample->gpu_percent) + " | GPU memory " +
         gpufeed::format_memory(sample->gpu_memory_used, sample->gpu_memory_total);
}

}  // namespace train_classifier
