#include "gpufeed/observe/monitor.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <exception>
#include <string>
#include <utility>

#include "core/metrics/json_text.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/log.hpp"
#include "gpufeed/observe/detail/nvml.hpp"
#include "gpufeed/observe/detail/utilization_window.hpp"
#include "gpufeed/observe/proc_stat.hpp"
#include "gpufeed/observe/process.hpp"

namespace gpufeed {

namespace {

using steady = std::chrono::steady_clock;

double seconds_between(steady::time_point from, steady::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

std::string to_json(monitor_sample const& sample) {
  std::string out;
  out.reserve(512);
  {
    detail::object_text o{out};
    // Fixed decimals: a Unix time in 9 significant digits would lose its seconds.
    auto const unix_s = std::chrono::duration<double>(sample.time.time_since_epoch()).count();
    o.fixed("time_unix_s", unix_s, 3);
    o.fixed("elapsed_s", sample.elapsed_s, 3);
    o.integer("gpu_index", sample.gpu_index);
    o.fixed("gpu_percent", sample.gpu_percent, 1);
    o.integer("gpu_memory_used_bytes", sample.gpu_memory_used);
    o.integer("gpu_memory_total_bytes", sample.gpu_memory_total);
    o.fixed("process_cpu_percent", sample.process_cpu_percent, 1);
    o.fixed("process_cpu_percent_of_cpus", sample.process_cpu_percent_of_cpus, 1);
    o.integer("cpus", sample.cpus);
    o.fixed("system_cpu_percent", sample.system_cpu_percent, 1);
    o.integer("process_rss_bytes", sample.process_rss);
    o.integer("ram_used_bytes", sample.ram_used);
    o.integer("ram_total_bytes", sample.ram_total);
    o.fixed("monitor_cpu_s", sample.monitor_cpu_s, 6);
  }
  return out;
}

// The readings a sample is compared with. Used by the monitor's thread only (and by the
// constructor, before that thread starts).
struct system_monitor::sampler {
  steady::time_point start = steady::now();
  long ticks_per_s = sysconf(_SC_CLK_TCK);
  long page_bytes = sysconf(_SC_PAGESIZE);
  unsigned cpus = observe::usable_cpus();
  steady::time_point last_time = start;
  std::optional<observe::process_cpu_ticks> last_process;
  std::optional<observe::system_cpu_ticks> last_system;

  sampler() { (void)read_cpu(); }

  // Reads both CPU counters; they become the baseline of the next call.
  std::pair<std::optional<observe::process_cpu_ticks>, std::optional<observe::system_cpu_ticks>>
  read_cpu() {
    auto const process_text = observe::read_proc_file("/proc/self/stat");
    // The aggregate line comes first; the rest (one line per CPU, interrupts) is not needed.
    auto const system_text = observe::read_proc_file("/proc/stat", 1024);
    auto const process = process_text ? observe::parse_process_stat(*process_text) : std::nullopt;
    auto const system = system_text ? observe::parse_system_stat(*system_text) : std::nullopt;
    auto previous = std::pair{last_process, last_system};
    last_process = process;
    last_system = system;
    return previous;
  }

  monitor_sample take(detail::nvml const& nvml, std::optional<unsigned> gpu) {
    monitor_sample sample;
    sample.time = std::chrono::system_clock::now();
    auto const now = steady::now();
    sample.elapsed_s = seconds_between(start, now);
    double const wall_s = seconds_between(last_time, now);
    last_time = now;

    auto const [process_before, system_before] = read_cpu();
    sample.cpus = cpus;
    if (process_before && last_process && last_process->total() >= process_before->total() &&
        wall_s > 0) {
      double const percent = observe::cpu_percent(last_process->total() - process_before->total(),
                                                  wall_s, ticks_per_s);
      sample.process_cpu_percent = percent;
      sample.process_cpu_percent_of_cpus = percent / static_cast<double>(cpus);
    }
    if (system_before && last_system) {
      sample.system_cpu_percent = observe::system_cpu_percent(*system_before, *last_system);
    }

    if (auto const statm = observe::read_proc_file("/proc/self/statm")) {
      if (auto const pages = observe::parse_statm_resident_pages(*statm); pages && page_bytes > 0) {
        sample.process_rss = *pages * static_cast<std::uint64_t>(page_bytes);
      }
    }
    if (!sample.process_rss) {
      if (auto const status = observe::read_proc_file("/proc/self/status")) {
        sample.process_rss = observe::parse_status_rss_bytes(*status);
      }
    }
    if (auto const text = observe::read_proc_file("/proc/meminfo")) {
      if (auto const memory = observe::parse_meminfo(*text)) {
        sample.ram_used = memory->used();
        sample.ram_total = memory->total;
      }
    }

    if (gpu) {
      sample.gpu_index = gpu;
      if (auto const percent = nvml.utilization(*gpu)) sample.gpu_percent = *percent;
      if (auto const memory = nvml.memory(*gpu)) {
        sample.gpu_memory_used = memory->used;
        sample.gpu_memory_total = memory->total;
      }
    }
    return sample;
  }
};

system_monitor::system_monitor(monitor_options options) : options_{std::move(options)} {
  GPUFEED_EXPECTS(options_.interval.count() > 0, "monitor_options::interval is " +
                                                     std::to_string(options_.interval.count()) +
                                                     " ms; it must be more than 0");
  GPUFEED_EXPECTS(options_.history > 0, "monitor_options::history is 0; it must be at least 1");

  nvml_ = std::make_unique<detail::nvml>();  // logs, once per process, when NVML is absent
  if (!nvml_->available()) {
    gpu_reason_ = "NVML unavailable: " + nvml_->unavailable_reason();
  } else if (!options_.gpu_pci_bus_id.empty()) {
    gpu_index_ = nvml_->index_of(options_.gpu_pci_bus_id);
    if (!gpu_index_) gpu_reason_ = "NVML knows no GPU at PCI bus id " + options_.gpu_pci_bus_id;
  } else if (nvml_->name(options_.gpu_index)) {
    gpu_index_ = options_.gpu_index;
  } else {
    gpu_reason_ = "NVML has no GPU with index " + std::to_string(options_.gpu_index);
  }
  if (!gpu_index_ && nvml_->available()) {
    logger()->warn("system monitor: {}; GPU utilization and memory will not be reported",
                   gpu_reason_);
  }

  ring_.reserve(std::min<std::size_t>(options_.history, 4096));
  sampler_ = std::make_unique<sampler>();
  thread_ = std::thread{[this] { run(); }};
}

system_monitor::~system_monitor() {
  stop();
}

void system_monitor::stop() noexcept {
  std::lock_guard const joining{join_mutex_};
  {
    std::lock_guard const lock{mutex_};
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void system_monitor::publish(monitor_sample const& sample) {
  std::lock_guard const lock{mutex_};
  if (ring_.size() < options_.history) {
    ring_.push_back(sample);
  } else {
    ring_[next_] = sample;
  }
  next_ = (next_ + 1) % options_.history;
  ++taken_;
  cost_s_ += sample.monitor_cpu_s;
}

void system_monitor::run() noexcept {
  detail::utilization_window window{
      std::chrono::duration<double>(options_.low_utilization_window).count(),
      options_.low_utilization_percent};
  // What failed, said once each: taking a sample, on_sample, on_low_utilization.
  std::array<bool, 3> said{};
  auto const guarded = [&](std::size_t what, char const* name, auto&& action) {
    try {
      action();
    } catch (std::exception const& e) {
      if (!std::exchange(said[what], true))
        logger()->warn("system monitor: {}: {}", name, e.what());
    } catch (...) {
      if (!std::exchange(said[what], true)) {
        logger()->warn("system monitor: {}: an exception not derived from std::exception", name);
      }
    }
  };

  auto next = steady::now() + options_.interval;
  std::unique_lock lock{mutex_};
  // Fixed deadlines, not fixed sleeps, so that the time a sample takes does not stretch the
  // interval; after an overrun (a suspended process) the schedule restarts from now.
  while (!wake_.wait_until(lock, next, [this] { return stopping_; })) {
    lock.unlock();
    auto const now = steady::now();
    next += options_.interval;
    if (next <= now) next = now + options_.interval;

    std::optional<monitor_sample> sample;
    guarded(0, "a sample failed", [&] {
      double const cpu_before = observe::thread_cpu_seconds();
      sample = sampler_->take(*nvml_, gpu_index_);
      sample->monitor_cpu_s = observe::thread_cpu_seconds() - cpu_before;
      publish(*sample);
    });
    if (sample && options_.on_sample) {
      guarded(1, "on_sample threw", [&] { options_.on_sample(*sample); });
    }
    if (sample && gpu_index_) {
      if (auto const low = window.add(sample->elapsed_s, sample->gpu_percent)) {
        logger()->warn(
            "GPU {} utilization averaged {:.0f}% over the last {:.0f} s (under {:.0f}%): the GPU "
            "waits for work. If the loader stalls (stats::stall_fraction()), input is the "
            "bottleneck: see the loader's diagnosis and docs/tuning.md",
            *gpu_index_, low->mean_percent, low->span_s, options_.low_utilization_percent);
        if (options_.on_low_utilization) {
          low_utilization const event{
              .gpu_index = *gpu_index_,
              .mean_percent = low->mean_percent,
              .threshold_percent = options_.low_utilization_percent,
              .window_s = low->span_s,
              .samples = low->readings,
          };
          guarded(2, "on_low_utilization threw", [&] { options_.on_low_utilization(event); });
        }
      }
    }
    lock.lock();
  }
}

std::optional<monitor_sample> system_monitor::latest() const {
  std::lock_guard const lock{mutex_};
  if (ring_.empty()) return std::nullopt;
  return ring_[(next_ + options_.history - 1) % options_.history];
}

std::vector<monitor_sample> system_monitor::history() const {
  std::lock_guard const lock{mutex_};
  std::vector<monitor_sample> out;
  out.reserve(ring_.size());
  // Until the ring is full, next_ == ring_.size() and the oldest is at 0.
  std::size_t const oldest = ring_.size() < options_.history ? 0 : next_;
  for (std::size_t i = 0; i < ring_.size(); ++i) out.push_back(ring_[(oldest + i) % ring_.size()]);
  return out;
}

std::uint64_t system_monitor::samples_taken() const {
  std::lock_guard const lock{mutex_};
  return taken_;
}

double system_monitor::cost_per_sample_s() const {
  std::lock_guard const lock{mutex_};
  return taken_ > 0 ? cost_s_ / static_cast<double>(taken_) : 0.0;
}

}  // namespace gpufeed
