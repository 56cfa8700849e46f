#include "gpufeed_feed.hpp"

#include <gpufeed/datasets/image_folder.hpp>
#include <gpufeed/torch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

namespace train_classifier {
namespace {

gpufeed::image_options image_options_for(feed_options const& options) {
  gpufeed::image_options o{.height = options.image_size, .width = options.image_size};
  if (options.train) {
    auto const& a = options.augment;
    o.resize = gpufeed::resize_mode::random_resized_crop;
    o.scale_min = a.scale_min;
    o.ratio_min = a.ratio_min;
    o.ratio_max = a.ratio_max;
    o.horizontal_flip = true;
    o.jitter = {.brightness = a.jitter, .contrast = a.jitter, .saturation = a.jitter};
  }
  return o;  // evaluation: resize to image_size * 256 / 224, centre crop
}

// image_folder, with the CPU time its reads take on the worker threads (the example's
// instrumentation: the library's own stage times are wall times).
class cpu_timed_images final : public gpufeed::dataset {
 public:
  explicit cpu_timed_images(std::shared_ptr<gpufeed::image_folder const> images)
      : images_{std::move(images)} {}
  std::size_t size() const override { return images_->size(); }
  gpufeed::sample_spec spec() const override { return images_->spec(); }
  void read(std::size_t index, gpufeed::sample_view out,
            gpufeed::read_context const& ctx) const override {
    double const start = thread_cpu_seconds();
    images_->read(index, out, ctx);
    cpu_ns_.fetch_add(static_cast<std::uint64_t>(1e9 * (thread_cpu_seconds() - start)),
                      std::memory_order_relaxed);
  }
  [[nodiscard]] double cpu_s() const { return 1e-9 * static_cast<double>(cpu_ns_.load()); }

 private:
  std::shared_ptr<gpufeed::image_folder const> images_;
  mutable std::atomic<std::uint64_t> cpu_ns_{0};
};

class gpufeed_feed final : public feed {
 public:
  explicit gpufeed_feed(feed_options const& options)
      : device_{options.device},
        images_{
            std::make_shared<gpufeed::image_folder>(options.folder, image_options_for(options))},
        timed_{std::make_shared<cpu_timed_images>(images_)},
        options_{gpufeed::torch::data_loader_options{options.batch_size}
                     .workers(options.workers)
                     .accumulation_steps(options.accumulation_steps)
                     .shuffle(options.train)},
        seed_{options.seed} {
#if GPUFEED_TORCH_WITH_CUDA
    if (device_.is_cuda()) {
      // Batches arrive on the GPU as uint8 (4x fewer bytes than float32 over PCIe) and are
      // converted there: HWC -> CHW, / 255, mean and std, in one kernel after the copy.
      options_.device(device_.has_index() ? device_.index() : 0);
      options_.loader().transforms.push_back({.field = "image",
                                              .to = gpufeed::dtype::f32,
                                              .output_layout = gpufeed::image_layout::chw,
                                              .scale = 1.0F / 255,
                                              .mean = {channel_mean.begin(), channel_mean.end()},
                                              .std = {channel_std.begin(), channel_std.end()}});
    }
#endif
    auto const float_options = torch::TensorOptions{}.dtype(torch::kFloat).device(device_);
    mean_ = torch::tensor({channel_mean[0], channel_mean[1], channel_mean[2]}, float_options)
                .view({1, 3, 1, 1});
    std_ = torch::tensor({channel_std[0], channel_std[1], channel_std[2]}, float_options)
               .view({1, 3, 1, 1});
    batches_ = gpufeed::batch_plan{images_->size(), options.batch_size, options.accumulation_steps,
                                   gpufeed::tail_policy::keep, gpufeed::tail_policy::keep}
                   .batches();
  }

  // A fresh loader for each epoch, seeded for it: between two of this run's epochs the other
  // run trains, and a loader kept alive would prepare this run's next batches on its time.
  // libtorch's loader prepares nothing between epochs either (its begin() starts the work).
  void start_epoch(std::uint64_t epoch) override {
    loader_.reset();
    begin_epoch();
    options_.seed(seed_ * 1'000'003U + epoch);
    loader_ =
        gpufeed::torch::make_data_loader(std::shared_ptr<gpufeed::dataset const>{timed_}, options_);
  }

  std::size_t batches_per_epoch() const override {
    return batches_;
  }

  pipeline_stages stages() const override {
    // The library times its stages by the wall clock; their shares split the reads' CPU time.
    auto const t = images_->stage_times();
    double const wall = t.read_s + t.decode_s + t.resize_s + t.jitter_s;
    double const cpu = timed_->cpu_s();
    double const per_wall = wall > 0 ? cpu / wall : 0.0;
    return {.samples = t.images,
            .decode_s = (t.read_s + t.decode_s) * per_wall,
            .augment_s = (t.resize_s + t.jitter_s) * per_wall,
            .convert_s = convert_s_,
            .stack_s = 0,  // samples are written into the batch: nothing to collate
            .decoded_share = t.source_pixels > 0 ? static_cast<double>(t.decoded_pixels) /
                                                       static_cast<double>(t.source_pixels)
                                                 : 1.0};
  }

 private:
  std::optional<micro_batch> fetch() override {
    auto batch = loader_->next();
    if (!batch) return std::nullopt;
    // batch->data and batch->target view the loader's slot, which goes back to the ring when
    // the last tensor viewing it is gone: model_input makes new tensors (or, on the GPU path,
    // keeps the slot until the step is done) and the labels are copied.
    return micro_batch{.images = batch->data,
                       .labels = batch->target.to(device_, /*non_blocking=*/false, /*copy=*/true),
                       .step = batch->step};
  }

  // uint8 [N, H, W, 3] -> normalised float32 [N, 3, H, W] on the training device, timed as the
  // feed's conversion stage. Batches that the GPU transform has already converted pass through.
  torch::Tensor model_input(torch::Tensor const& images) override {
    if (images.scalar_type() != torch::kUInt8) return images;
    double const start = thread_cpu_seconds();
    auto converted = images
                         .to(device_)  // to the GPU as uint8 when the loader delivers host batches
                         .permute({0, 3, 1, 2})
                         .contiguous()
                         .to(torch::kFloat)
                         .div_(255)
                         .sub_(mean_)
                         .div_(std_);
    convert_s_ += thread_cpu_seconds() - start;
    return converted;
  }

  void finish_epoch(epoch_measure& epoch) override {
    auto const s = loader_->loader().snapshot();
    epoch.busy_s = s.read_s;
    epoch.busy_p50_s = s.read.p50_s;
    epoch.busy_p99_s = s.read.p99_s;
    epoch.slot_wait_s = s.slot_wait_s;
    epoch.ring_slots = s.ring_slots;
    loader_.reset();  // its workers stop before the other run's epoch
  }

  torch::Device device_;
  std::shared_ptr<gpufeed::image_folder> images_;
  std::shared_ptr<cpu_timed_images> timed_;
  gpufeed::torch::data_loader_options options_;
  std::uint64_t seed_;
  std::size_t batches_ = 0;
  std::unique_ptr<gpufeed::torch::data_loader> loader_;
  torch::Tensor mean_;
  torch::Tensor std_;
  double convert_s_ = 0;
};

}  // namespace

std::unique_ptr<feed> make_gpufeed_feed(feed_options const& options) {
  return std::make_unique<gpufeed_feed>(options);
}

}  // namespace train_classifier
