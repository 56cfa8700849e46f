#pragma once
// The end of a run: a table of the runs, the gpufeed / libtorch ratio, and an optional JSON file.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "training.hpp"

namespace train_classifier {

/// The run's settings, for the JSON file.
struct run_settings {
  std::size_t train_images = 0;
  std::size_t held_out_images = 0;
  int image_size = 0;
  std::size_t batch_size = 0;
  std::size_t accumulation_steps = 0;
  unsigned workers = 0;
  std::size_t epochs = 0;
  double lr = 0;
  std::uint64_t seed = 0;
  std::string device;
  int torch_threads = 0;
  std::string dataset;
};

/// gpufeed's samples/s over libtorch's, when both ran.
[[nodiscard]] std::optional<double> throughput_ratio(std::vector<run_result> const& runs);

/// Prints the table and, when both feeds ran, the line
/// `gpufeed / libtorch: 1.23x samples/s (data wait 1.0% vs 20.0%)`.
void print_summary(std::vector<run_result> const& runs, double total_seconds);

/// Writes the settings and the runs as one JSON object.
/// @throws std::runtime_error if the file cannot be written.
void write_json(std::filesystem::path const& path, run_settings const& settings,
                std::vector<run_result> const& runs);

}  // namespace train_classifier
