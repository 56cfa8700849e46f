#include "classifier.hpp"

namespace train_classifier {
namespace {

// A 3x3 convolution, batch norm and ReLU, appended to `layers`.
void add_conv(torch::nn::Sequential& layers, std::int64_t in, std::int64_t out,
              std::int64_t stride) {
  layers->push_back(torch::nn::Conv2d{
      torch::nn::Conv2dOptions{in, out, 3}.stride(stride).padding(1).bias(false)});
  layers->push_back(torch::nn::BatchNorm2d{out});
  layers->push_back(torch::nn::ReLU{torch::nn::ReLUOptions{}.inplace(true)});
}

}  // namespace

classifier_impl::classifier_impl(std::int64_t classes) : head_{64, classes} {
  add_conv(features_, 3, 16, 2);   // 1/2 resolution
  add_conv(features_, 16, 32, 2);  // 1/4
  add_conv(features_, 32, 32, 2);  // 1/8
  add_conv(features_, 32, 64, 2);  // 1/16
  register_module("features", features_);
  register_module("head", head_);
}

torch::Tensor classifier_impl::forward(torch::Tensor images) {
  auto x = features_->forward(images);
  x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
  return head_->forward(x);
}

}  // namespace train_classifier
