#pragma once
// A synthetic regression problem with a learnable target: sample i is a feature vector x_i with
// values in [-1, 1), derived from (seed, i) alone, and y_i = w . x_i + b for a fixed w and b
// (also from the seed). A linear model trained on it drives the loss towards zero, so a run shows
// whether the ranks really learn together.
#include <gpufeed/gpufeed.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace train_ddp {

class regression_dataset final : public gpufeed::dataset {
 public:
  /// @param size samples; @param features length of x; @param seed the data and the target;
  /// @param chunk reported as storage_chunk() (0: none), to show the chunk-aware shuffle.
  regression_dataset(std::size_t size, std::size_t features, std::uint64_t seed,
                     std::size_t chunk = 0);

  [[nodiscard]] std::size_t size() const override { return size_; }
  /// "x": float32 [features], "y": float32 [1].
  [[nodiscard]] gpufeed::sample_spec spec() const override;
  /// Thread-safe: computes the sample from its index, holds no per-sample state.
  void read(std::size_t index, gpufeed::sample_view out,
            gpufeed::read_context const& ctx) const override;
  [[nodiscard]] std::size_t storage_chunk() const override { return chunk_; }

 private:
  std::size_t size_;
  std::size_t features_;
  std::uint64_t seed_;
  std::size_t chunk_;
  std::vector<float> weights_;  // the target's w
  float bias_;                  // and b
};

}  // namespace train_ddp
