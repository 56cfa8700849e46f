#include "decode.hpp"

#include <stdlib.h>  // mkdtemp
#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "bench_clock.hpp"
#include "decode_images.hpp"
#include "decode_limit.hpp"
#include "gpufeed/datasets/image_folder.hpp"
#include "gpufeed/loader.hpp"
#include "loader_pass.hpp"
#include "paired.hpp"
#include "summary_stats.hpp"
#include "table.hpp"

namespace gpufeed::bench {
namespace {

namespace fs = std::filesystem;

// What each case asks of the pipeline, and the least it should reach against the limit.
struct decode_case {
  std::string name;
  gpufeed::image_options options;
  double goal = 1.0;
  std::string what;
};

decode_case make_case(std::string const& name, decode_config const& config) {
  gpufeed::image_options o{.height = config.output, .width = config.output};
  if (name == "whole") {
    // RandomResizedCrop with scale 1 and any ratio falls back to the whole image: every pixel
    // is decoded and resized to output x output.
    o.resize = gpufeed::resize_mode::random_resized_crop;
    o.scale_min = o.scale_max = 1.0F;
    o.ratio_min = 0.01F;
    o.ratio_max = 100.0F;
    return {name, o, 0.9, "the whole image, resized"};
  }
  if (name == "center") {
    return {name, o, 1.0, "resize to 256/224 of the output, centre crop (validation)"};
  }
  if (name == "random") {
    o.resize = gpufeed::resize_mode::random_resized_crop;
    o.horizontal_flip = true;
    return {name, o, 1.0, "RandomResizedCrop (0.08-1, 3/4-4/3) and flip (training)"};
  }
  if (name == "random_small") {
    o.height = o.width = config.small_output;
    o.resize = gpufeed::resize_mode::random_resized_crop;
    o.horizontal_flip = true;
    return {name, o, 1.0, "as random, to the small output size"};
  }
  throw std::invalid_argument{"--cases: unknown case '" + name +
                              "' (whole, center, random, random_small)"};
}

// A temporary folder, removed with its contents.
class scratch_folder {
 public:
  scratch_folder() {
    std::string pattern = (fs::temp_directory_path() / "gpufeed-bench-decode-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error{"cannot create a temporary folder under " +
                               fs::temp_directory_path().string()};
    }
    path_ = pattern;
  }
  ~scratch_folder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  scratch_folder(scratch_folder const&) = delete;
  scratch_folder& operator=(scratch_folder const&) = delete;
  [[nodiscard]] fs::path const& path() const noexcept { return path_; }

 private:
  fs::path path_;
};

jpeg_files read_all(std::vector<gpufeed::image_entry> const& entries) {
  jpeg_files files;
  files.reserve(entries.size());
  for (auto const& entry : entries) {
    std::error_code ec;
    auto const size = fs::file_size(entry.path, ec);
    std::vector<unsigned char> bytes(ec ? 0 : size);
    std::ifstream in{entry.path, std::ios::binary};
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!in || bytes.empty()) throw std::runtime_error{"cannot read " + entry.path};
    files.push_back(std::move(bytes));
  }
  return files;
}

struct pipeline_run {
  double seconds = 0;
  consumed delivered;
  gpufeed::stats stats;
  gpufeed::image_stage_times before;
  gpufeed::image_stage_times after;
};

pipeline_run run_pipeline(std::shared_ptr<gpufeed::image_folder const> const& images,
                          decode_config const& config, std::uint64_t epoch) {
  auto options = to_loader_options(config.common);
  options.shuffle = true;
  options.seed = config.seed;
  gpufeed::loader source{images, options};
  source.set_epoch(epoch);  // other crops in each run
  consume(source, config.warmup);
  pipeline_run run;
  run.before = images->stage_times();
  auto const start = bench_clock::now();
  run.delivered = consume(source, config.common.batches);
  run.seconds = seconds_between(start, bench_clock::now());
  run.after = images->stage_times();
  run.stats = source.snapshot();
  return run;
}

double per_image_us(double after_s, double before_s, std::uint64_t images) {
  return images > 0 ? 1e6 * (after_s - before_s) / static_cast<double>(images) : 0.0;
}

// The check_whole_file settings --check-whole-file asks for, in the order each repeat runs them.
std::vector<bool> whole_file_checks(std::string const& setting) {
  if (setting == "on") return {true};
  if (setting == "off") return {false};
  return {true, false};
}

// One pipeline's measurements over the repeats of a case, each against that repeat's limit.
struct pipeline_samples {
  std::vector<double> rates, ratios, read_us, decode_us, resize_us, busy, decoded_share,
      planar_share;

  void add(pipeline_run const& run, double limit_rate) {
    double const rate = static_cast<double>(run.delivered.samples) / run.seconds;
    rates.push_back(rate);
    ratios.push_back(ratio_or_zero(rate, limit_rate));
    std::uint64_t const images = run.after.images - run.before.images;
    read_us.push_back(per_image_us(run.after.read_s, run.before.read_s, images));
    decode_us.push_back(per_image_us(run.after.decode_s, run.before.decode_s, images));
    resize_us.push_back(per_image_us(run.after.resize_s, run.before.resize_s, images));
    decoded_share.push_back(
        ratio_or_zero(static_cast<double>(run.after.decoded_pixels - run.before.decoded_pixels),
                      static_cast<double>(run.after.source_pixels - run.before.source_pixels)));
    planar_share.push_back(
        ratio_or_zero(static_cast<double>(run.after.planar_images - run.before.planar_images),
                      static_cast<double>(images)));
    busy.push_back(run.stats.worker_busy_fraction());
  }
};

// What a case's pipeline is called in the report: the default keeps the name it always had.
std::string pipeline_name(decode_case const& c, bool check_whole_file) {
  return check_whole_file ? c.name : c.name + " (check_whole_file=false)";
}

}  // namespace

CLI::App* add_decode_command(CLI::App& app, decode_config& config) {
  CLI::App* command = add_command(
      app,
      {.name = "decode",
       .description = "JPEG decode through the image datasets (read, decode, crop, resize into the "
                      "batch) next to libjpeg-turbo's own whole-image decode speed on the same "
                      "files with as many threads",
       .footer =
           "Each pair runs the decode limit, then the pipeline, on the same files, for the same "
           "number of images (--batches x --batch-size). The limit: --workers threads decode whole "
           "images from memory with libjpeg's API as tjbench -fastdct does (JDCT_IFAST unless "
           "--limit-dct accurate, fancy upsampling, RGB), nothing else. The pipeline: a fresh "
           "gpufeed::loader (shuffled) over gpufeed::image_folder, which reads each file, decodes "
           "the iMCU rows and columns the crop covers (of a baseline JPEG to its Y/Cb/Cr planes; a "
           "progressive one's small crops to RGB, its larger ones to planes whole) at the smallest "
           "DCT scale that covers the output, and resizes into the batch. ratio = median over "
           "pairs of pipeline images/s / limit images/s; goals: whole >= 0.9, the others >= 1.0, "
           "for each pipeline --check-whole-file runs (with both, the stopping one's row also has "
           "its median of paired ratios to the checked one). Per-image stage times, the share of "
           "pixels decoded and the share of images decoded to planes (planar_image_share) come "
           "from image_folder::stage_times().",
       .workers = "Loader worker threads, and the thread count of the decode limit (default: the "
                  "CPUs this process may use)"},
      config.common);
  command
      ->add_option("--folder", config.folder,
                   "An image_folder (root/<class>/*.jpg) to measure (default: a generated set of "
                   "--images photograph-like JPEGs, removed afterwards)")
      ->type_name("DIR");
  add_value(*command, "--images", config.images, "Generated set: number of JPEGs", "N")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000000}));
  add_value(*command, "--image-width", config.image_width, "Generated set: width in pixels", "PX")
      ->check(CLI::Range(16, 8192));
  add_value(*command, "--image-height", config.image_height, "Generated set: height in pixels",
            "PX")
      ->check(CLI::Range(16, 8192));
  add_value(*command, "--quality", config.quality, "Generated set: JPEG quality (1-100)", "Q")
      ->check(CLI::Range(1, 100));
  add_value(*command, "--output", config.output,
            "Output side in pixels of the whole, center and random cases", "PX")
      ->check(CLI::Range(8, 4096));
  add_value(*command, "--small-output", config.small_output, "Output side of random_small", "PX")
      ->check(CLI::Range(8, 4096));
  add_list(*command, "--cases", config.cases,
           "Which pipelines to measure, comma-separated: whole (RandomResizedCrop with scale 1: "
           "the whole image resized), center (resize + centre crop), random (RandomResizedCrop + "
           "flip), random_small (the same to --small-output)",
           "LIST");
  add_repeat_options(
      *command, config.repeats,
      "Limit/pipeline pairs per case, interleaved; the goals are the median of their ratios",
      config.warmup, "Untimed batches before each timed loader run");
  add_value(*command, "--seed", config.seed, "Seed of the generated set and of the shuffle", "N");
  add_choice(*command, "--check-whole-file", config.check_whole_file,
             "Which pipelines each case runs: on (image_options::check_whole_file, the default: "
             "every JPEG read to its end, damage anywhere an error), off (decoding stops after "
             "the crop's last row), or both, each repeat running the limit, then on and off (off "
             "and on in every other repeat)",
             "on|off|both", {"on", "off", "both"});
  add_choice(*command, "--limit-dct", config.limit_dct,
             "The decode limit's inverse DCT: fast (JDCT_IFAST, as tjbench -fastdct; the goals' "
             "limit) or accurate (JDCT_ISLOW, libjpeg's default, which the pipeline uses as PIL "
             "and OpenCV do; for analysis: no goals are judged against it)",
             "fast|accurate", {"fast", "accurate"});
  return command;
}

report run_decode(decode_config const& config, std::ostream& progress) {
  if (config.cases.empty()) throw std::invalid_argument{"--cases: no case given"};
  std::vector<decode_case> cases;
  for (auto const& name : config.cases) cases.push_back(make_case(name, config));

  limit_dct const dct = config.limit_dct == "accurate" ? limit_dct::accurate : limit_dct::fast;
  std::unique_ptr<scratch_folder> generated;
  fs::path root = config.folder;
  if (root.empty()) {
    generated = std::make_unique<scratch_folder>();
    root = generated->path();
    progress << "decode: writing " << config.images << " JPEGs of " << config.image_width << "x"
             << config.image_height << " (quality " << config.quality << ") to " << root.string()
             << '\n';
    write_photo_set(root, {.images = config.images,
                           .width = config.image_width,
                           .height = config.image_height,
                           .quality = config.quality,
                           .seed = config.seed});
  }
  std::vector<bool> const checks = whole_file_checks(config.check_whole_file);
  // folders[case][k]: the case's pipeline with checks[k].
  std::vector<std::vector<std::shared_ptr<gpufeed::image_folder const>>> folders;
  for (auto const& c : cases) {
    auto& per_check = folders.emplace_back();
    for (bool const check : checks) {
      auto options = c.options;
      options.check_whole_file = check;
      per_check.push_back(std::make_shared<gpufeed::image_folder>(root, options));
    }
  }
  // In memory for the limit, and in the page cache for the pipeline.
  jpeg_files const files = read_all(folders.front().front()->entries());
  std::uint64_t encoded_bytes = 0;
  for (auto const& f : files) encoded_bytes += f.size();
  std::uint64_t const images_per_run =
      static_cast<std::uint64_t>(config.common.batches) * config.common.batch_size;
  unsigned const threads = config.common.workers;
  progress << "decode: " << files.size() << " JPEGs (" << format_bytes(encoded_bytes) << "), "
           << threads << " workers/threads, " << images_per_run << " images per run, "
           << config.repeats << " repeats per case (limit, then check_whole_file "
           << config.check_whole_file << ")\n";

  std::vector<double> all_limit_rates;
  std::vector<bench_result> rows;
  std::vector<goal> goals;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    auto const& c = cases[k];
    std::vector<double> limit_rates;
    std::vector<pipeline_samples> samples(checks.size());
    for (std::size_t r = 0; r < config.repeats; ++r) {
      auto const limit = measure_decode_limit(files, threads, images_per_run, dct);
      double const limit_rate = limit.images_per_s();
      limit_rates.push_back(limit_rate);
      all_limit_rates.push_back(limit_rate);
      progress << "  " << c.name << " " << r + 1 << '/' << config.repeats << ": limit "
               << format_rate(limit_rate);
      // Every other repeat runs the pipelines in the opposite order, so that neither always
      // comes first after the limit.
      for (std::size_t i = 0; i < checks.size(); ++i) {
        std::size_t const v = r % 2 == 0 ? i : checks.size() - 1 - i;
        samples[v].add(run_pipeline(folders[k][v], config, r), limit_rate);
        progress << "  " << (checks[v] ? "checked " : "stopping ")
                 << format_rate(samples[v].rates.back()) << " ("
                 << format_fixed(samples[v].ratios.back(), 2) << ')';
      }
      progress << '\n';
    }
    for (std::size_t v = 0; v < checks.size(); ++v) {
      auto const& s = samples[v];
      std::string const name = pipeline_name(c, checks[v]);
      bench_result row;
      row.loader = "gpufeed image_folder: " + name;
      row.samples_per_s = median(s.rates);
      row.batches_per_s = *row.samples_per_s / static_cast<double>(config.common.batch_size);
      row.bytes_per_s = *row.samples_per_s * static_cast<double>(c.options.height) *
                        static_cast<double>(c.options.width) * 3.0;
      row.ratio = median(s.ratios);
      row.peak_rss_bytes = std::nullopt;
      row.pinned_bytes = 0;
      row.details = {{"case", c.name},
                     {"pipeline", c.what},
                     {"check_whole_file", checks[v]},
                     {"output", {c.options.height, c.options.width}},
                     {"samples_per_s_runs", s.rates},
                     {"limit_images_per_s_runs", limit_rates},
                     {"ratio_runs", s.ratios},
                     {"ratio_median_of_pairs", median(s.ratios)},
                     {"read_us_per_image", median(s.read_us)},
                     {"decode_us_per_image", median(s.decode_us)},
                     {"resize_us_per_image", median(s.resize_us)},
                     {"decoded_pixel_share", median(s.decoded_share)},
                     {"planar_image_share", median(s.planar_share)},
                     {"worker_read_fraction", median(s.busy)}};
      if (!checks[v] && v > 0) {  // against the checked pipeline of the same repeats
        auto const over_checked =
            paired_rates{.peer = samples[0].rates, .loader = s.rates}.ratios();
        row.details["over_check_whole_file_runs"] = over_checked;
        row.details["over_check_whole_file_median_of_pairs"] = median(over_checked);
      }
      rows.push_back(std::move(row));
      // The goals are against tjbench -fastdct's limit; the accurate limit is for analysis only.
      if (dct == limit_dct::fast) {
        goals.push_back(paired_goal("ratio to the decode limit: " + name, c.goal,
                                    paired_rates{.peer = limit_rates, .loader = s.rates}));
      }
    }
  }

  bench_result limit_row;
  limit_row.loader = "libjpeg_turbo_limit";
  limit_row.samples_per_s = median(all_limit_rates);
  limit_row.details = {
      {"threads", threads},
      {"method", dct == limit_dct::fast ? "libjpeg API, JDCT_IFAST, fancy upsampling, RGB, whole "
                                          "images from memory (tjbench -fastdct)"
                                        : "libjpeg API, JDCT_ISLOW, fancy upsampling, RGB, whole "
                                          "images from memory (tjbench)"},
      {"samples_per_s_runs", all_limit_rates}};

  report rep;
  // The flags are added by main (config_of); these are what the run found.
  rep.config = {{"generated", config.folder.empty()},
                {"check_whole_file", config.check_whole_file},
                {"files", files.size()},
                {"encoded_bytes", encoded_bytes}};
  rep.results.push_back(std::move(limit_row));
  for (auto& row : rows) rep.results.push_back(std::move(row));
  rep.goals = std::move(goals);
  return rep;
}

}  // namespace gpufeed::bench
