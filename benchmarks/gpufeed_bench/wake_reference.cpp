#include "wake_reference.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "bench_clock.hpp"

namespace gpufeed::bench {

std::vector<double> measure_condvar_wake_us(unsigned threads, std::size_t wakes) {
  std::mutex mutex;
  std::condition_variable wake;
  std::size_t generation = 0;
  unsigned parked = 0;
  std::size_t woken = 0;  // wake-ups seen, summed over threads: one per generation
  bool stop = false;

  std::vector<std::jthread> sleepers;
  sleepers.reserve(threads);
  for (unsigned t = 0; t < threads; ++t) {
    sleepers.emplace_back([&] {
      std::unique_lock lock{mutex};
      std::size_t seen = generation;
      while (!stop) {
        ++parked;
        wake.wait(lock, [&] { return generation != seen || stop; });
        --parked;
        if (stop) break;
        ++woken;
        seen = generation;
      }
    });
  }

  std::vector<double> micros;
  micros.reserve(wakes);
  for (std::size_t i = 0; i < wakes; ++i) {
    for (;;) {  // untimed: the last wake was taken and every thread is parked again
      {
        std::lock_guard const lock{mutex};
        if (woken >= generation && parked == threads) break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds{20});
    }
    auto const start = bench_clock::now();
    {
      std::lock_guard const lock{mutex};
      ++generation;
    }
    wake.notify_one();
    micros.push_back(1e6 * seconds_between(start, bench_clock::now()));
  }
  {
    std::lock_guard const lock{mutex};
    stop = true;
  }
  wake.notify_all();
  return micros;
}

}  // namespace gpufeed::bench
