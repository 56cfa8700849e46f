#include "utilization_sampler.hpp"

#include "gpufeed/detail/nvml.hpp"

namespace gpufeed::bench {

std::optional<double> utilization_samples::mean_fraction() const {
  if (percent.empty()) return std::nullopt;
  double sum = 0;
  for (auto const value : percent) sum += value;
  return sum / static_cast<double>(percent.size()) / 100.0;
}

utilization_sampler::utilization_sampler(gpufeed::detail::nvml const& nvml,
                                         std::optional<unsigned> index,
                                         std::chrono::milliseconds period)
    : nvml_{nvml}, index_{index}, period_{period} {}

utilization_sampler::~utilization_sampler() {
  (void)stop();
}

void utilization_sampler::start() {
  (void)stop();
  samples_ = {};
  stopping_ = false;
  if (index_) thread_ = std::thread{[this] { loop(); }};
}

utilization_samples utilization_sampler::stop() {
  {
    std::lock_guard const lock{mutex_};
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  return samples_;
}

void utilization_sampler::loop() {
  std::unique_lock lock{mutex_};
  auto next = std::chrono::steady_clock::now() + period_;
  while (!wake_.wait_until(lock, next, [this] { return stopping_; })) {
    // Fixed deadlines, not fixed sleeps, so that a slow query does not stretch the period.
    next += period_;
    lock.unlock();
    auto const percent = nvml_.utilization(*index_);
    lock.lock();
    if (percent) {
      samples_.percent.push_back(*percent);
    } else {
      ++samples_.failed;
    }
  }
}

}  // namespace gpufeed::bench
