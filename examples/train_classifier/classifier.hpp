#pragma once
// The model: a small convolutional network for 3-channel images of any size, written with
// libtorch's C++ modules.

#include <torch/torch.h>

#include <cstdint>

namespace train_classifier {

/// Four 3x3 convolutions with batch norm and ReLU, each halving the resolution, global average
/// pooling and one linear layer: about 33 thousand parameters and 2.5 million multiply-adds per
/// 64x64 image, so that the training step, even on a CPU, is quicker than libtorch's loader
/// (as a GPU's step is).
class classifier_impl : public torch::nn::Module {
 public:
  explicit classifier_impl(std::int64_t classes);
  /// @param images float32 [N, 3, H, W], normalised. @return logits [N, classes].
  torch::Tensor forward(torch::Tensor images);

 private:
  torch::nn::Sequential features_;  // the convolutions
  torch::nn::Linear head_;
};
TORCH_MODULE_IMPL(classifier, classifier_impl);

}  // namespace train_classifier
