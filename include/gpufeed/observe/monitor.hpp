#pragma once
/// @file
/// @brief A background thread that samples the GPU, the CPU and memory while a run goes on.
/// Part of `gpufeed::observe` (link that CMake target; Linux, NVML loaded at run time).
///
/// @code
/// gpufeed::system_monitor monitor{{.interval = std::chrono::seconds{1}}};
/// // ... train ...
/// if (auto const sample = monitor.latest()) {
///   std::puts(gpufeed::to_json(*sample).c_str());  // one line of JSON, for a metrics file
/// }
/// @endcode
///
/// Each sample holds the GPU's utilization and memory (through NVML, loaded at run time: where
/// the NVIDIA driver is absent those fields are empty and the reason is logged once), this
/// process's CPU use and resident memory, and the machine's CPU use and memory. The monitor
/// also warns, once per window, when the GPU's mean utilization stays low.
///
/// Cost: one sample reads four small /proc files and makes two NVML queries;
/// `cost_per_sample_s()` reports the CPU time this takes on the monitor's thread. Measured
/// without NVML on a 2-CPU machine (docs/benchmarks/monitor): 59 to 200 us per
/// sample, at most 0.02 % of one core at the default 1 s interval. NVML's cost with a GPU is not
/// measured.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gpufeed {

namespace detail {
class nvml;
}

/// @brief What the monitor saw at one moment. An empty optional means "unknown": NVML absent,
/// a /proc file unreadable, or (for the CPU percentages) no earlier reading to compare with.
struct monitor_sample {
  /// Wall-clock time of the sample.
  std::chrono::system_clock::time_point time{};
  /// Seconds since the monitor started (steady clock).
  double elapsed_s = 0;

  std::optional<unsigned> gpu_index{};              ///< NVML's index of the GPU watched
  std::optional<double> gpu_percent{};              ///< GPU utilization, 0-100 (NVML's last period)
  std::optional<std::uint64_t> gpu_memory_used{};   ///< bytes, as NVML counts them
  std::optional<std::uint64_t> gpu_memory_total{};  ///< bytes

  /// This process's CPU use since the previous sample, in percent of one core (400 = four
  /// cores busy).
  std::optional<double> process_cpu_percent{};
  /// The same, over the CPUs this process may use (0-100).
  std::optional<double> process_cpu_percent_of_cpus{};
  unsigned cpus = 0;                           ///< CPUs this process may use (affinity)
  std::optional<double> system_cpu_percent{};  ///< the whole machine's CPU use, 0-100
  std::optional<std::uint64_t> process_rss{};  ///< this process's resident memory, bytes
  std::optional<std::uint64_t> ram_used{};     ///< MemTotal - MemAvailable, bytes
  std::optional<std::uint64_t> ram_total{};    ///< MemTotal, bytes

  /// CPU time the monitor's thread spent taking this sample (its own cost), seconds.
  double monitor_cpu_s = 0;
};

/// @brief One line of JSON (no newline), every field of `sample`; unknown values are `null`.
/// Keys: `time_unix_s`, `elapsed_s`, `gpu_index`, `gpu_percent`, `gpu_memory_used_bytes`,
/// `gpu_memory_total_bytes`, `process_cpu_percent`, `process_cpu_percent_of_cpus`, `cpus`,
/// `system_cpu_percent`, `process_rss_bytes`, `ram_used_bytes`, `ram_total_bytes`,
/// `monitor_cpu_s`.
[[nodiscard]] std::string to_json(monitor_sample const& sample);

/// @brief A window during which the GPU's mean utilization stayed under the threshold.
struct low_utilization {
  unsigned gpu_index = 0;
  double mean_percent = 0;       ///< the window's mean utilization
  double threshold_percent = 0;  ///< monitor_options::low_utilization_percent
  double window_s = 0;           ///< the window's span
  std::size_t samples = 0;       ///< samples with a utilization in the window
};

/// @brief How the monitor samples. Designated initializers keep call sites readable.
struct monitor_options {
  /// Time between samples (more than 0). NVML's utilization averages over its own period (1/6 s
  /// to 1 s, by product), so sampling faster than that does not see more.
  std::chrono::milliseconds interval{1000};
  /// Samples kept by `history()` (at least 1); the oldest is dropped first.
  std::size_t history = 600;
  /// The GPU to watch: NVML's index (not CUDA's, which differs under CUDA_VISIBLE_DEVICES or
  /// CUDA_DEVICE_ORDER) ...
  unsigned gpu_index = 0;
  /// ... unless this PCI bus id is given ("0000:65:00.0", as cudaDeviceGetPCIBusId writes it;
  /// the way to name a CUDA device), which NVML maps to its index.
  std::string gpu_pci_bus_id{};
  /// The low-utilization warning: logged once per window of this length when the GPU's mean
  /// utilization over it stays under `low_utilization_percent`. Zero turns it off.
  std::chrono::milliseconds low_utilization_window{std::chrono::seconds{30}};
  double low_utilization_percent = 30;
  /// Called on the monitor's thread after each sample. It must be quick and must not destroy
  /// or stop the monitor; an exception it throws is logged and ignored.
  std::function<void(monitor_sample const&)> on_sample{};
  /// Called on the monitor's thread, after the warning is logged, for each low window (same
  /// rules as on_sample).
  std::function<void(low_utilization const&)> on_low_utilization{};
};

/// @brief Samples the GPU, the CPU and memory on its own thread, from construction until
/// `stop()` or destruction.
///
/// Threading: every member function may be called from any thread, concurrently. The callbacks
/// run on the monitor's thread.
class system_monitor {
 public:
  /// @brief Validates the options, loads NVML (logging once per process when it is absent),
  /// takes the first reading and starts the thread. The first sample comes one `interval` later
  /// (the CPU percentages need two readings).
  /// @throws logic_error on a zero interval or history.
  explicit system_monitor(monitor_options options = {});
  /// @brief Stops and joins the thread: returns within one sample's time, never throws.
  ~system_monitor();
  system_monitor(system_monitor const&) = delete;
  system_monitor& operator=(system_monitor const&) = delete;
  system_monitor(system_monitor&&) = delete;
  system_monitor& operator=(system_monitor&&) = delete;

  /// @brief Stops sampling and joins the thread (idempotent). Blocks until a sample being taken
  /// completes. Must not be called from a callback.
  void stop() noexcept;

  /// @brief The most recent sample, or nullopt before the first.
  [[nodiscard]] std::optional<monitor_sample> latest() const;
  /// @brief The kept samples, oldest first (at most `monitor_options::history`).
  [[nodiscard]] std::vector<monitor_sample> history() const;
  /// @brief Samples taken since construction (including those dropped from the history).
  [[nodiscard]] std::uint64_t samples_taken() const;
  /// @brief Mean CPU time of the monitor's thread per sample, in seconds (0 before the first).
  [[nodiscard]] double cost_per_sample_s() const;

  /// @brief Whether GPU fields are reported (NVML loaded and the GPU found).
  [[nodiscard]] bool gpu_available() const noexcept { return gpu_index_.has_value(); }
  /// @brief Why GPU fields are absent; empty when they are reported.
  [[nodiscard]] std::string gpu_unavailable_reason() const { return gpu_reason_; }
  /// @brief NVML's index of the GPU watched, when NVML knows it.
  [[nodiscard]] std::optional<unsigned> gpu_index() const noexcept { return gpu_index_; }
  /// @brief The options in force.
  [[nodiscard]] monitor_options const& options() const noexcept { return options_; }

 private:
  struct sampler;  // the previous readings, owned by the thread

  void run() noexcept;
  void publish(monitor_sample const& sample);

  monitor_options options_;
  std::unique_ptr<detail::nvml> nvml_;
  std::optional<unsigned> gpu_index_;  // set exactly when GPU fields are reported
  std::string gpu_reason_;             // why they are not; empty when they are
  std::unique_ptr<sampler> sampler_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<monitor_sample> ring_;  // capacity options_.history; next_ is the next write
  std::size_t next_ = 0;
  std::uint64_t taken_ = 0;
  double cost_s_ = 0;
  std::mutex join_mutex_;  // serializes concurrent stop() calls around join
  std::thread thread_;     // last: started after everything it uses
};

}  // namespace gpufeed
