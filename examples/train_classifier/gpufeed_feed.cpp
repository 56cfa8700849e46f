#include "gpufeed_feed.hpp"

#include <gpufeed/datasets/image_folder.hpp>
#include <gpufeed/torch.hpp>

#include <utility>

namespace train_classifier {
namespace {

class gpufeed_feed final : public feed {
 public:
  explicit gpufeed_feed(feed_options const& options) : device_{options.device} {
    auto images = std::make_shared<gpufeed::image_folder>(
        options.folder,
        gpufeed::image_options{.height = options.image_size,
                               .width = options.image_size,
                               .resize = gpufeed::resize_mode::center_crop,
                               .resize_to = options.image_size,  // the whole image, scaled
                               .horizontal_flip = options.train});
    auto loader_options = gpufeed::torch::data_loader_options{options.batch_size}
                              .workers(options.workers)
                              .accumulation_steps(options.accumulation_steps)
                              .seed(options.seed)
                              .shuffle(options.train);
#if GPUFEED_TORCH_WITH_CUDA
    if (device_.is_cuda()) {
      // Batches arrive on the GPU as uint8 (4x fewer bytes than float32 over PCIe) and are
      // converted there: HWC -> CHW, / 255, mean and std, in one kernel after the copy.
      loader_options.device(device_.has_index() ? device_.index() : 0);
      loader_options.loader().transforms.push_back(
          {.field = "image",
           .to = gpufeed::dtype::f32,
           .output_layout = gpufeed::image_layout::chw,
           .scale = 1.0F / 255,
           .mean = {channel_mean.begin(), channel_mean.end()},
           .std = {channel_std.begin(), channel_std.end()}});
    }
#endif
    loader_ = gpufeed::torch::make_data_loader(
        std::shared_ptr<gpufeed::dataset const>{std::move(images)}, loader_options);
    auto const float_options = torch::TensorOptions{}.dtype(torch::kFloat).device(device_);
    mean_ = torch::tensor({channel_mean[0], channel_mean[1], channel_mean[2]}, float_options)
                .view({1, 3, 1, 1});
    std_ = torch::tensor({channel_std[0], channel_std[1], channel_std[2]}, float_options)
               .view({1, 3, 1, 1});
  }

  std::optional<micro_batch> next() override {
    auto const start = clock::now();
    auto batch = loader_->next();
    waited_since(start);
    if (!batch) return std::nullopt;
    // batch->data and batch->target view the loader's slot, which goes back to the ring when
    // the last tensor viewing it is gone: the images below are new tensors (or, on the GPU path,
    // keep the slot until the step is done) and the labels are copied.
    return micro_batch{.images = model_input(batch->data),
                       .labels = batch->target.to(device_, /*non_blocking=*/false, /*copy=*/true),
                       .step = batch->step};
  }

  std::size_t batches_per_epoch() const override {
    return loader_->loader().batches_per_epoch();
  }

 private:
  // uint8 [N, H, W, 3] -> normalised float32 [N, 3, H, W] on the training device. Batches that
  // the GPU transform has already converted pass through.
  torch::Tensor model_input(torch::Tensor const& images) const {
    if (images.scalar_type() != torch::kUInt8) return images;
    return images
        .to(device_)  // to the GPU as uint8 when the loader delivers host batches
        .permute({0, 3, 1, 2})
        .contiguous()
        .to(torch::kFloat)
        .div_(255)
        .sub_(mean_)
        .div_(std_);
  }

  torch::Device device_;
  std::unique_ptr<gpufeed::torch::data_loader> loader_;
  torch::Tensor mean_;
  torch::Tensor std_;
};

}  // namespace

std::unique_ptr<feed> make_gpufeed_feed(feed_options const& options) {
  return std::make_unique<gpufeed_feed>(options);
}

}  // namespace train_classifier
