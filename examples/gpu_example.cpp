// The complete example of docs/gpu.md: batches delivered on the GPU, converted there from uint8
// to normalized bfloat16 CHW, consumed on the training step's own stream. Built as
// build/bin/gpu_example where gpufeed has its CUDA path; without a CUDA device it says so and
// exits 0.
#include <cuda_runtime_api.h>
#include <gpufeed/cuda/device.hpp>
#include <gpufeed/cuda/stream.hpp>
#include <gpufeed/datasets/synthetic.hpp>
#include <gpufeed/gpufeed.hpp>

#include <iostream>
#include <memory>

int main() {
  if (gpufeed::cuda::device_count() == 0) {
    std::cout << "no CUDA device (" << gpufeed::cuda::unavailable_reason()
              << "): this example needs one\n";
    return 0;
  }
  // 1. Any dataset: here 64x64 RGB pictures as uint8 HWC, as image decoders produce them.
  auto pictures = std::make_shared<gpufeed::synthetic>(
      20'000, gpufeed::sample_spec{}
                  .add("image", gpufeed::dtype::u8, {64, 64, 3})
                  .add("label", gpufeed::dtype::i64, {}));

  // 2. The stream the training step runs on. The loader never blocks the host for it: next()
  //    makes this stream wait for the batch's copy, and releasing a batch records on it.
  gpufeed::cuda::cuda_stream step;

  gpufeed::loader_options options{.batch_size = 256,
                                  .workers = 8,
                                  .prefetch_depth = 4,
                                  .shuffle = true,
                                  .seed = 1,
                                  .target = gpufeed::placement::cuda,
                                  .consumer_stream = step.view()};
  // 3. uint8 crosses PCIe (4x fewer bytes than float32); one kernel on the copy stream turns it
  //    into what the model wants.
  options.transforms.push_back({.field = "image",
                                .to = gpufeed::dtype::bf16,
                                .output_layout = gpufeed::image_layout::chw,
                                .scale = 1.0f / 255,
                                .mean = {0.485f, 0.456f, 0.406f},
                                .std = {0.229f, 0.224f, 0.225f}});
  gpufeed::loader loader{pictures, options};

  for (auto& batch : loader) {
    gpufeed::tensor_view const image = batch.field("image");  // bf16 [256, 3, 64, 64], device
    gpufeed::tensor_view const label = batch.field("label");  // int64 [256], device
    // Launch the training step on `step` here, reading image.data() and label.data(). The
    // batch goes back to the loader when it is destroyed at the end of this iteration; work
    // already queued on `step` may still read it.
    (void)image;
    (void)label;
  }
  step.synchronize();
  auto const stats = loader.snapshot();
  std::cout << stats.to_string() << '\n';
  return stats.batches == loader.batches_per_epoch() ? 0 : 1;
}
