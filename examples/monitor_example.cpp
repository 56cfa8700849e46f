// The example of docs/tuning.md's "Watching a run": a system monitor and a progress line around
// a training loop. Built as build/bin/monitor_example and run by ctest (label "examples"); it
// exits non-zero if the monitor reports a machine without memory.
#include <gpufeed/gpufeed.hpp>
#include <gpufeed/observe.hpp>  // the monitor and the progress line: CMake target gpufeed::observe

#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <thread>

namespace {
void train_step(gpufeed::batch const& /*batch*/) {  // yours; here a stand-in
  std::this_thread::sleep_for(std::chrono::milliseconds{10});
}
}  // namespace

int main() {
  gpufeed::sample_spec spec;
  spec.add("image", gpufeed::dtype::u8, {32, 32, 3}).add("label", gpufeed::dtype::i64, {});
  gpufeed::loader loader{std::make_shared<gpufeed::synthetic>(4'096, spec),
                         {.batch_size = 256, .workers = 2, .prefetch_depth = 4, .seed = 1}};

  // GPU utilization and memory (through NVML, where the driver is), CPU and RAM, sampled each
  // interval on the monitor's own thread; a warning when the GPU averages under 30 % for 30 s.
  gpufeed::system_monitor monitor{{.interval = std::chrono::milliseconds{100}}};
  // On a terminal: one line redrawn in place. Elsewhere: a log line every 30 s.
  gpufeed::progress_line progress;

  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    loader.set_epoch(epoch);
    for (auto& batch : loader) {
      train_step(batch);
      progress.update(loader, &monitor);  // draws at most every interval
    }
    progress.end_epoch(loader.snapshot(), epoch);  // a summary line, through the log
  }

  monitor.stop();
  if (auto const sample = monitor.latest()) {  // also history(): the last 600 samples
    std::cout << gpufeed::to_json(*sample) << "\n";
    if (sample->ram_total.value_or(0) == 0) return 1;
  }
  std::cout << "monitor cost: " << monitor.cost_per_sample_s() * 1e6 << " us of CPU per sample\n";
}
