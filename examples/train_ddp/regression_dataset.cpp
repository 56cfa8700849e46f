#include "regression_dataset.hpp"

#include <cstdint>

namespace train_ddp {
namespace {
// A value in [-1, 1) from (seed, a, b): the same on every rank and in every run.
float uniform(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
  auto const bits = gpufeed::mix_seed(seed, a, b) >> 40;  // 24 bits: exact in a float
  return static_cast<float>(bits) / static_cast<float>(1U << 23) - 1.0F;
}
constexpr std::uint64_t target_stream = ~std::uint64_t{0};  // the target's own (seed, a) stream
}  // namespace

regression_dataset::regression_dataset(std::size_t size, std::size_t features, std::uint64_t seed,
                                       std::size_t chunk)
    : size_{size},
      features_{features},
      seed_{seed},
      chunk_{chunk},
      bias_{uniform(seed, target_stream, features)} {
  weights_.reserve(features);
  for (std::size_t j = 0; j < features; ++j) weights_.push_back(uniform(seed, target_stream, j));
}

gpufeed::sample_spec regression_dataset::spec() const {
  gpufeed::sample_spec spec;
  spec.add("x", gpufeed::dtype::f32, {static_cast<std::int64_t>(features_)})
      .add("y", gpufeed::dtype::f32, {1});
  return spec;
}

void regression_dataset::read(std::size_t index, gpufeed::sample_view out,
                              gpufeed::read_context const& /*ctx*/) const {
  auto const x = out.as<float>(0);
  float y = bias_;
  for (std::size_t j = 0; j < features_; ++j) {
    x[j] = uniform(seed_, index, j);
    y += weights_[j] * x[j];
  }
  out.as<float>(1)[0] = y;
}

}  // namespace train_ddp
