#pragma once
// The end of a run: a table of the runs, each run's diagnosis, the gpufeed / libtorch ratio with
// the sentence that says where the difference comes from, and an optional JSON file.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "training.hpp"

namespace train_classifier {

/// The run's settings, for the JSON file and the chart's caption.
struct run_settings {
  std::size_t train_images = 0;
  std::size_t held_out_images = 0;
  int min_side = 0;
  int max_side = 0;
  std::uintmax_t dataset_bytes = 0;
  double generation_seconds = 0;  ///< 0 when the images came from the cache
  int image_size = 0;
  std::size_t batch_size = 0;
  std::size_t accumulation_steps = 0;
  unsigned workers = 0;
  std::size_t epochs = 0;
  double lr = 0;
  std::uint64_t seed = 0;
  std::string device;
  int torch_threads = 0;
  unsigned cpus = 0;
  std::string dataset;
  std::string commit;  ///< as given with --commit (scripts/demo passes git's), else empty
  std::vector<std::string> command_line;
  std::string date;  ///< when the run started, UTC, ISO 8601
  /// The 1-minute load average when the run started (other processes' load on a shared
  /// machine); negative where the kernel does not say.
  double load_average = -1;
};

/// gpufeed's samples/s over libtorch's, when both ran.
[[nodiscard]] std::optional<double> throughput_ratio(std::vector<run_result> const& runs);

/// One sentence, from the measured stage times, saying how the two loaders' costs per sample
/// differ and which stages the difference comes from; nullopt unless both ran.
[[nodiscard]] std::optional<std::string> explain_difference(std::vector<run_result> const& runs);

/// Prints the table, each run's stage times and diagnosis, and, when both feeds ran, the line
/// `gpufeed / libtorch: 2.31x samples/s (data wait 1.0% vs 60.0%)` and the explanation.
void print_summary(std::vector<run_result> const& runs, double total_seconds);

/// Writes the settings and the runs (pace series and epoch figures included) as one JSON object.
/// @throws std::runtime_error if the file cannot be written.
void write_json(std::filesystem::path const& path, run_settings const& settings,
                std::vector<run_result> const& runs, double total_seconds);

}  // namespace train_classifier
