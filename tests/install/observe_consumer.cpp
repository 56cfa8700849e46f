// Uses gpufeed::observe from an installed gpufeed: the system monitor samples this machine, and
// the progress line formats what it saw. Exits 0 when a sample arrived with the machine's memory.
#include <gpufeed/observe.hpp>

#include <chrono>
#include <exception>
#include <iostream>
#include <thread>

int main() {
  try {
    gpufeed::system_monitor monitor{{.interval = std::chrono::milliseconds{20}}};
    auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
    while (!monitor.latest() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
    monitor.stop();
    auto const sample = monitor.latest();
    if (!sample || !sample->ram_total || *sample->ram_total == 0) {
      std::cerr << "gpufeed_observe_install_check: no sample with the machine's memory\n";
      return 1;
    }
    gpufeed::progress_values values;
    values.ram_used = sample->ram_used;
    values.ram_total = sample->ram_total;
    std::cout << "gpufeed::observe from the installed package: " << gpufeed::format_progress(values)
              << " (" << gpufeed::observe::usable_cpus() << " CPUs)\n";
    return 0;
  } catch (std::exception const& error) {
    std::cerr << "gpufeed_observe_install_check: " << error.what() << "\n";
    return 1;
  }
}
