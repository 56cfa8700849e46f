#pragma once
// `gpufeed-bench decode`: the image datasets' JPEG pipeline (read, decode, crop, resize, into
// the batch) through gpufeed::loader, next to libjpeg-turbo's own whole-image decode speed on
// the same files with as many threads (decode_limit.hpp), measured in turn in the same run.
// Goals: at least 0.9 of the limit where the whole image must be decoded; beyond 1.0 where the
// crop or the output size lets the pipeline decode less.

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "common_options.hpp"
#include "json_report.hpp"

namespace CLI {
class App;
}

namespace gpufeed::bench {

struct decode_config {
  common_options common{.batch_size = 32, .prefetch_depth = 4, .batches = 25};
  std::string folder;        ///< an image_folder to measure; empty: generate a set
  std::size_t images = 200;  ///< generated set: images
  int image_width = 320;     ///< generated set: size
  int image_height = 256;
  int quality = 90;        ///< generated set: JPEG quality
  int output = 224;        ///< output side of the whole, center and random cases
  int small_output = 112;  ///< output side of the random_small case
  std::vector<std::string> cases{"whole", "center", "random", "random_small"};
  std::size_t repeats = 5;  ///< interleaved limit/pipeline pairs per case
  std::size_t warmup = 2;   ///< untimed batches before each timed loader run
  std::uint64_t seed = 1;   ///< generated set and the loader's shuffle
  /// The limit's inverse DCT: "fast" (tjbench -fastdct, the goals' limit) or "accurate"
  /// (JDCT_ISLOW, what the pipeline decodes with), to see how much of a gap the DCT makes; the
  /// goals are judged only against the fast limit (none are reported with "accurate").
  std::string limit_dct = "fast";
  /// Which pipelines each case runs against the same limit: "on" (image_options::
  /// check_whole_file, the default: every JPEG read to its end), "off" (decoding stops after the
  /// crop's last row) or "both" (each repeat runs the limit, then "on" and "off", in the
  /// opposite order every other repeat).
  std::string check_whole_file = "both";
};

/// Registers the `decode` subcommand and its flags, which write into `config`.
CLI::App* add_decode_command(CLI::App& app, decode_config& config);

/// Runs the benchmark, printing one line per pair to `progress`.
/// @throws std::exception on bad settings, unreadable images or a loader error.
[[nodiscard]] report run_decode(decode_config const& config, std::ostream& progress);

}  // namespace gpufeed::bench
