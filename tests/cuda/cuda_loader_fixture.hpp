#pragma once
// The CUDA suites' fixture: skips without a CUDA device, gives loader options that deliver to the
// device on a consumer stream of its own, and reads device tensors back on that stream.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "gpufeed/cuda/device.hpp"
#include "gpufeed/cuda/error.hpp"
#include "gpufeed/cuda/stream.hpp"
#include "gpufeed/datasets/synthetic.hpp"
#include "gpufeed/gpufeed.hpp"

namespace gpufeed::test {

class CudaLoader : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) {
      GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
    }
    stream_.emplace();
  }

  [[nodiscard]] stream_view stream() const { return stream_->view(); }

  loader_options cuda_options(std::size_t batch_size) const {
    return loader_options{.batch_size = batch_size,
                          .workers = 4,
                          .prefetch_depth = 3,
                          .shuffle = true,
                          .seed = 11,
                          .timeout = std::chrono::milliseconds{60'000},
                          .target = placement::cuda,
                          .consumer_stream = stream()};
  }

  /// The bytes of a device tensor, read on the consumer stream (so after the batch's copy).
  std::vector<std::byte> to_host(tensor_view const& t) const {
    std::vector<std::byte> out(t.bytes());
    GPUFEED_CUDA_TRY(cudaMemcpyAsync(out.data(), t.data(), out.size(), cudaMemcpyDeviceToHost,
                                     stream_->native()));
    stream_->synchronize();
    return out;
  }

  std::optional<cuda::cuda_stream> stream_;
};

inline std::vector<std::byte> expected_field(synthetic const& data, batch const& b, std::size_t f) {
  auto const bytes = data.spec()[f].bytes();
  std::vector<std::byte> out(bytes * b.size());
  for (std::size_t i = 0; i < b.size(); ++i) {
    data.expected(b.indices()[i], f, std::span{out}.subspan(i * bytes, bytes));
  }
  return out;
}

}  // namespace gpufeed::test
