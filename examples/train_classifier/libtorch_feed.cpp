#include "libtorch_feed.hpp"

#include <gpufeed/datasets/image_folder.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace train_classifier {
namespace {

using clock_type = std::chrono::steady_clock;

// CPU time per stage, summed over libtorch's worker threads, and their wall time (for the
// diagnosis, which speaks of the workers' share of the wall time). Instrumentation only: six
// thread-clock reads per sample, a few microseconds against milliseconds of work.
struct stage_counters {
  std::atomic<std::uint64_t> samples{0};
  std::atomic<std::uint64_t> decode_ns{0};
  std::atomic<std::uint64_t> augment_ns{0};
  std::atomic<std::uint64_t> convert_ns{0};
  std::atomic<std::uint64_t> stack_ns{0};
  std::atomic<std::uint64_t> busy_wall_ns{0};
  std::mutex mutex;
  std::vector<double> sample_wall_s;  // guarded by mutex

  static void add(std::atomic<std::uint64_t>& to, double seconds) {
    to.fetch_add(static_cast<std::uint64_t>(1e9 * seconds), std::memory_order_relaxed);
  }
  // Adds a sample's (or a batch's Stack's) wall time to the busy time; a sample's also to the
  // list its percentiles come from.
  void add_wall(clock_type::time_point from, bool sample) {
    auto const elapsed = clock_type::now() - from;
    busy_wall_ns.fetch_add(
        static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()),
        std::memory_order_relaxed);
    if (sample) {
      std::lock_guard lock{mutex};
      sample_wall_s.push_back(std::chrono::duration<double>(elapsed).count());
    }
  }
  // The samples' wall times since the last call, and forgets them.
  std::vector<double> take_sample_walls() {
    std::lock_guard lock{mutex};
    return std::exchange(sample_wall_s, {});
  }
  [[nodiscard]] double busy_s() const {
    return 1e-9 * static_cast<double>(busy_wall_ns.load(std::memory_order_relaxed));
  }
};

// --- The torch::data side as libtorch's users write it: OpenCV decodes and augments in get(),
// --- tensors do the colour jitter and the float conversion, Stack<> collates.

// torchvision's RandomResizedCrop.get_params: a random area and aspect ratio, 10 attempts, then
// the centre crop of the closest allowed ratio.
cv::Rect random_resized_crop(int width, int height, augmentation const& a, std::mt19937& rng) {
  double const area = static_cast<double>(width) * height;
  std::uniform_real_distribution<double> scale{a.scale_min, 1.0};
  std::uniform_real_distribution<double> log_ratio{std::log(a.ratio_min), std::log(a.ratio_max)};
  for (int attempt = 0; attempt < 10; ++attempt) {
    double const target = area * scale(rng);
    double const ratio = std::exp(log_ratio(rng));
    auto const w = static_cast<int>(std::lround(std::sqrt(target * ratio)));
    auto const h = static_cast<int>(std::lround(std::sqrt(target / ratio)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      int const y = std::uniform_int_distribution<int>{0, height - h}(rng);
      int const x = std::uniform_int_distribution<int>{0, width - w}(rng);
      return {x, y, w, h};
    }
  }
  double const in_ratio = static_cast<double>(width) / height;
  int w = width;
  int h = height;
  if (in_ratio < a.ratio_min) {
    h = static_cast<int>(std::lround(static_cast<double>(width) / a.ratio_min));
  } else if (in_ratio > a.ratio_max) {
    w = static_cast<int>(std::lround(static_cast<double>(height) * a.ratio_max));
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

// cv::resize as OpenCV recommends: INTER_AREA to shrink, bilinear to enlarge.
cv::Mat resized(cv::Mat const& image, int width, int height) {
  cv::Mat out;
  bool const shrink = image.cols > width && image.rows > height;
  cv::resize(image, out, cv::Size{width, height}, 0, 0, shrink ? cv::INTER_AREA : cv::INTER_LINEAR);
  return out;
}

// torchvision's evaluation transform: Resize(size * 256 / 224) of the shorter side, CenterCrop.
cv::Mat resize_center_crop(cv::Mat const& image, int size) {
  int const shorter = static_cast<int>(std::lround(size * 256.0 / 224.0));
  double const s = static_cast<double>(shorter) / std::min(image.cols, image.rows);
  cv::Mat const scaled = resized(image, std::max(size, static_cast<int>(image.cols * s)),
                                 std::max(size, static_cast<int>(image.rows * s)));
  return scaled(cv::Rect{(scaled.cols - size) / 2, (scaled.rows - size) / 2, size, size}).clone();
}

torch::Tensor grayscale(torch::Tensor const& rgb) {  // [3, H, W] -> [1, H, W]
  return (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]).unsqueeze(0);
}

// torchvision's ColorJitter(brightness, contrast, saturation) on a float image in [0, 1]: each
// factor from [max(0, 1 - x), 1 + x], the three in a random order.
torch::Tensor color_jitter(torch::Tensor image, float strength, std::mt19937& rng) {
  std::uniform_real_distribution<double> factor{std::max(0.0, 1.0 - strength), 1.0 + strength};
  std::array<int, 3> order{0, 1, 2};
  std::shuffle(order.begin(), order.end(), rng);
  for (int op : order) {
    double const f = factor(rng);
    if (op == 0) {
      image = (image * f).clamp_(0, 1);
    } else if (op == 1) {
      auto const mean = grayscale(image).mean();
      image = (image * f + mean * (1 - f)).clamp_(0, 1);
    } else {
      image = (image * f + grayscale(image) * (1 - f)).clamp_(0, 1);
    }
  }
  return image;
}

// Each of libtorch's workers calls get() on its own copy of the dataset: copies share the file
// list and the stage counters; each worker thread draws from its own generator.
class jpeg_folder : public torch::data::datasets::Dataset<jpeg_folder> {
 public:
  jpeg_folder(std::shared_ptr<std::vector<gpufeed::image_entry> const> files,
              feed_options const& options, std::shared_ptr<stage_counters> counters)
      : files_{std::move(files)},
        size_{options.image_size},
        train_{options.train},
        augment_{options.augment},
        counters_{std::move(counters)} {}

  torch::data::Example<> get(std::size_t index) override {
    thread_local std::mt19937 rng{std::random_device{}()};
    auto const& file = files_->at(index);
    auto const wall_start = clock_type::now();
    double const started = thread_cpu_seconds();
    cv::Mat const decoded = cv::imread(file.path, cv::IMREAD_COLOR);
    if (decoded.empty()) throw std::runtime_error{"cannot read the image " + file.path};
    double const decoded_at = thread_cpu_seconds();

    cv::Mat image;
    if (train_) {
      image = resized(decoded(random_resized_crop(decoded.cols, decoded.rows, augment_, rng)),
                      size_, size_);
      if (std::bernoulli_distribution{0.5}(rng)) cv::flip(image, image, 1);
    } else {
      image = resize_center_crop(decoded, size_);
    }
    cv::cvtColor(image, image, cv::COLOR_BGR2RGB);
    double const cropped_at = thread_cpu_seconds();
    // [H, W, 3] uint8 -> [3, H, W] float in [0, 1]; to() copies out of the cv::Mat.
    auto pixels = torch::from_blob(image.data, {size_, size_, 3}, torch::kUInt8)
                      .permute({2, 0, 1})
                      .to(torch::kFloat)
                      .div_(255);
    double const floated_at = thread_cpu_seconds();
    if (train_) pixels = color_jitter(pixels, augment_.jitter, rng);
    double const jittered_at = thread_cpu_seconds();
    for (std::int64_t c = 0; c < 3; ++c) {
      pixels[c]
          .sub_(channel_mean[static_cast<std::size_t>(c)])
          .div_(channel_std[static_cast<std::size_t>(c)]);
    }
    double const done = thread_cpu_seconds();

    stage_counters::add(counters_->decode_ns, decoded_at - started);
    stage_counters::add(counters_->augment_ns,
                        (cropped_at - decoded_at) + (jittered_at - floated_at));
    stage_counters::add(counters_->convert_ns, (floated_at - cropped_at) + (done - jittered_at));
    counters_->add_wall(wall_start, /*sample=*/true);
    counters_->samples.fetch_add(1, std::memory_order_relaxed);
    return {pixels, torch::tensor(file.label, torch::kInt64)};
  }

  torch::optional<std::size_t> size() const override { return files_->size(); }

 private:
  std::shared_ptr<std::vector<gpufeed::image_entry> const> files_;
  int size_;
  bool train_;
  augmentation augment_;
  std::shared_ptr<stage_counters> counters_;
};

// Stack<>, timed: libtorch's workers collate each batch after its get() calls.
class timed_stack : public torch::data::transforms::Collation<torch::data::Example<>> {
 public:
  explicit timed_stack(std::shared_ptr<stage_counters> counters) : counters_{std::move(counters)} {}
  torch::data::Example<> apply_batch(std::vector<torch::data::Example<>> examples) override {
    auto const wall_start = clock_type::now();
    double const start = thread_cpu_seconds();
    auto batch = stack_.apply_batch(std::move(examples));
    stage_counters::add(counters_->stack_ns, thread_cpu_seconds() - start);
    counters_->add_wall(wall_start, /*sample=*/false);
    return batch;
  }

 private:
  torch::data::transforms::Stack<> stack_;
  std::shared_ptr<stage_counters> counters_;
};

auto mapped(jpeg_folder data, std::shared_ptr<stage_counters> counters) {
  return std::move(data).map(timed_stack{std::move(counters)});
}

template <class Sampler>
class libtorch_feed final : public feed {
 public:
  libtorch_feed(jpeg_folder data, std::shared_ptr<stage_counters> counters,
                feed_options const& options)
      : device_{options.device},
        workers_{options.workers},
        counters_{counters},
        plan_{*data.size(), options.batch_size, options.accumulation_steps,
              gpufeed::tail_policy::keep, gpufeed::tail_policy::keep},
        loader_{torch::data::make_data_loader<Sampler>(mapped(std::move(data), std::move(counters)),
                                                       torch::data::DataLoaderOptions()
                                                           .batch_size(options.batch_size)
                                                           .workers(options.workers))} {}

  void start_epoch(std::uint64_t /*epoch*/) override {
    begin_epoch();
    iterator_.reset();  // the first fetch calls begin(): the sampler reshuffles
    busy_at_start_ = counters_->busy_s();
    (void)counters_->take_sample_walls();
  }

  std::size_t batches_per_epoch() const override { return plan_.batches(); }

  pipeline_stages stages() const override {
    auto const s = [](std::atomic<std::uint64_t> const& ns) {
      return 1e-9 * static_cast<double>(ns.load(std::memory_order_relaxed));
    };
    return {.samples = counters_->samples.load(std::memory_order_relaxed),
            .decode_s = s(counters_->decode_ns),
            .augment_s = s(counters_->augment_ns),
            .convert_s = s(counters_->convert_ns),
            .stack_s = s(counters_->stack_ns),
            .decoded_share = 1.0};  // cv::imread decodes every pixel at full size
  }

 private:
  std::optional<micro_batch> fetch() override {
    // libtorch's iterator fetches lazily: the wait is in begin()/++ and the comparison with end.
    if (iterator_) {
      ++*iterator_;
    } else {
      iterator_.emplace(loader_->begin());
      sequence_ = 0;
    }
    if (*iterator_ == loader_->end()) return std::nullopt;
    torch::data::Example<> batch = **iterator_;
    return micro_batch{.images = batch.data.to(device_),
                       .labels = batch.target.to(device_),
                       .step = plan_.step(sequence_++)};
  }

  void finish_epoch(epoch_measure& epoch) override {
    epoch.busy_s = counters_->busy_s() - busy_at_start_;
    auto walls = counters_->take_sample_walls();
    epoch.busy_p50_s = percentile(walls, 0.5);
    epoch.busy_p99_s = percentile(walls, 0.99);
    epoch.slot_wait_s = 0;  // libtorch does not say how long its workers waited for room
    epoch.ring_slots = 2 * static_cast<std::size_t>(workers_);  // libtorch's max_jobs default
    iterator_.reset();
  }

  using loader_type = decltype(torch::data::make_data_loader<Sampler>(
      mapped(std::declval<jpeg_folder>(), nullptr), torch::data::DataLoaderOptions()));
  using iterator_type = decltype(std::declval<loader_type&>()->begin());

  torch::Device device_;
  unsigned workers_;
  std::shared_ptr<stage_counters> counters_;
  gpufeed::batch_plan plan_;
  loader_type loader_;
  std::optional<iterator_type> iterator_;
  std::size_t sequence_ = 0;
  double busy_at_start_ = 0;
};

}  // namespace

std::unique_ptr<feed> make_libtorch_feed(feed_options const& options) {
  // The same files and labels as gpufeed's image_folder (torchvision's ImageFolder order).
  auto files = std::make_shared<std::vector<gpufeed::image_entry> const>(
      gpufeed::image_folder{options.folder}.entries());
  auto counters = std::make_shared<stage_counters>();
  jpeg_folder data{std::move(files), options, counters};
  if (options.train) {
    return std::make_unique<libtorch_feed<torch::data::samplers::RandomSampler>>(
        std::move(data), std::move(counters), options);
  }
  return std::make_unique<libtorch_feed<torch::data::samplers::SequentialSampler>>(
      std::move(data), std::move(counters), options);
}

}  // namespace train_classifier
