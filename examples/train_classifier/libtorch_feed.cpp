#include "libtorch_feed.hpp"

#include <gpufeed/datasets/image_folder.hpp>

#include <cstdint>
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

// Each of libtorch's workers calls get() on its own copy of the dataset: copies share the file
// list and have their own random generator (the same seed in each, as users write it).
class jpeg_folder : public torch::data::datasets::Dataset<jpeg_folder> {
 public:
  jpeg_folder(std::shared_ptr<std::vector<gpufeed::image_entry> const> files, int size, bool flip,
              std::uint64_t seed)
      : files_{std::move(files)}, size_{size}, flip_{flip}, random_{seed} {}

  torch::data::Example<> get(std::size_t index) override {
    auto const& file = files_->at(index);
    cv::Mat const decoded = cv::imread(file.path, cv::IMREAD_COLOR);
    if (decoded.empty()) throw std::runtime_error{"cannot read the image " + file.path};
    cv::Mat image;
    cv::resize(decoded, image, cv::Size{size_, size_}, 0, 0, cv::INTER_AREA);
    if (flip_ && std::bernoulli_distribution{0.5}(random_)) cv::flip(image, image, 1);
    cv::cvtColor(image, image, cv::COLOR_BGR2RGB);
    // [H, W, 3] uint8 -> [3, H, W] float in [0, 1]; to() copies out of the cv::Mat.
    auto pixels = torch::from_blob(image.data, {size_, size_, 3}, torch::kUInt8)
                      .permute({2, 0, 1})
                      .to(torch::kFloat)
                      .div_(255);
    return {pixels, torch::tensor(file.label, torch::kInt64)};
  }

  torch::optional<std::size_t> size() const override { return files_->size(); }

 private:
  std::shared_ptr<std::vector<gpufeed::image_entry> const> files_;
  int size_;
  bool flip_;
  std::mt19937_64 random_;
};

auto mapped(jpeg_folder data) {
  return std::move(data)
      .map(torch::data::transforms::Normalize<>({channel_mean[0], channel_mean[1], channel_mean[2]},
                                                {channel_std[0], channel_std[1], channel_std[2]}))
      .map(torch::data::transforms::Stack<>());
}

template <class Sampler>
class libtorch_feed final : public feed {
 public:
  libtorch_feed(jpeg_folder data, feed_options const& options)
      : device_{options.device},
        plan_{*data.size(), options.batch_size, options.accumulation_steps,
              gpufeed::tail_policy::keep, gpufeed::tail_policy::keep},
        loader_{torch::data::make_data_loader<Sampler>(mapped(std::move(data)),
                                                       torch::data::DataLoaderOptions()
                                                           .batch_size(options.batch_size)
                                                           .workers(options.workers))} {}

  std::optional<micro_batch> next() override {
    auto const start = clock::now();
    // libtorch's iterator fetches lazily: the wait is in begin()/++ and the comparison with end.
    if (iterator_) {
      ++*iterator_;
    } else {
      iterator_.emplace(loader_->begin());  // a new epoch: the sampler reshuffles
      sequence_ = 0;
    }
    if (*iterator_ == loader_->end()) {
      iterator_.reset();
      waited_since(start);
      return std::nullopt;
    }
    torch::data::Example<> batch = **iterator_;
    waited_since(start);
    return micro_batch{.images = batch.data.to(device_),
                       .labels = batch.target.to(device_),
                       .step = plan_.step(sequence_++)};
  }

  std::size_t batches_per_epoch() const override { return plan_.batches(); }

 private:
  using loader_type = decltype(torch::data::make_data_loader<Sampler>(
      mapped(std::declval<jpeg_folder>()), torch::data::DataLoaderOptions()));
  using iterator_type = decltype(std::declval<loader_type&>()->begin());

  torch::Device device_;
  gpufeed::batch_plan plan_;
  loader_type loader_;
  std::optional<iterator_type> iterator_;
  std::size_t sequence_ = 0;
};

}  // namespace

std::unique_ptr<feed> make_libtorch_feed(feed_options const& options) {
  // The same files and labels as gpufeed's image_folder (torchvision's ImageFolder order).
  auto files = std::make_shared<std::vector<gpufeed::image_entry> const>(
      gpufeed::image_folder{options.folder}.entries());
  jpeg_folder data{std::move(files), options.image_size, options.train, options.seed};
  if (options.train) {
    return std::make_unique<libtorch_feed<torch::data::samplers::RandomSampler>>(std::move(data),
                                                                                 options);
  }
  return std::make_unique<libtorch_feed<torch::data::samplers::SequentialSampler>>(std::move(data),
                                                                                   options);
}

}  // namespace train_classifier
