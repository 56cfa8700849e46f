#include "gpufeed/datasets/synthetic.hpp"

#include <chrono>
#include <cstring>
#include <limits>
#include <thread>

#include "gpufeed/error.hpp"
#include "gpufeed/sampler.hpp"

namespace gpufeed {

namespace {
// xorshift64*: fast, and its state is one word, so the content of any sample is cheap to recompute.
std::uint64_t next_word(std::uint64_t& state) noexcept {
  state ^= state >> 12U;
  state ^= state << 25U;
  state ^= state >> 27U;
  return state * 0x2545f4914f6cdd1dULL;
}

template <class Float>
void fill_unit_floats(std::span<std::byte> out, std::uint64_t state) noexcept {
  constexpr int mantissa = std::numeric_limits<Float>::digits;
  auto const count = out.size() / sizeof(Float);
  for (std::size_t i = 0; i < count; ++i) {
    auto const bits = next_word(state) >> (64U - static_cast<unsigned>(mantissa));
    Float const value = static_cast<Float>(bits) / static_cast<Float>(std::uint64_t{1} << mantissa);
    std::memcpy(out.data() + i * sizeof(Float), &value, sizeof(Float));
  }
}

// Half-precision patterns of a value in [0, 1): a random mantissa under a random exponent below
// the bias keeps the value finite and under 1 for both float16 and bfloat16.
void fill_unit_halves(std::span<std::byte> out, std::uint64_t state, unsigned mantissa_bits,
                      unsigned bias) noexcept {
  auto const count = out.size() / 2;
  for (std::size_t i = 0; i < count; ++i) {
    auto const word = next_word(state);
    auto const exponent = static_cast<std::uint16_t>((word >> 32U) % bias);  // 0 .. bias-1
    auto const mantissa = static_cast<std::uint16_t>(word & ((1U << mantissa_bits) - 1U));
    auto const bits = static_cast<std::uint16_t>((exponent << mantissa_bits) | mantissa);
    std::memcpy(out.data() + i * 2, &bits, 2);
  }
}

void fill_bits(std::span<std::byte> out, std::uint64_t state) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= out.size(); i += 8) {
    auto const word = next_word(state);
    std::memcpy(out.data() + i, &word, 8);
  }
  if (i < out.size()) {
    auto const word = next_word(state);
    std::memcpy(out.data() + i, &word, out.size() - i);
  }
}

void burn_cpu(std::chrono::nanoseconds cost) noexcept {
  auto const until = std::chrono::steady_clock::now() + cost;
  while (std::chrono::steady_clock::now() < until) {
  }
}
}  // namespace

synthetic::synthetic(std::size_t size, sample_spec spec, synthetic_options options)
    : size_{size}, spec_{std::move(spec)}, options_{options} {
  GPUFEED_EXPECTS(!spec_.empty(), "a synthetic dataset needs at least one field");
}

void synthetic::expected(std::size_t index, std::size_t f, std::span<std::byte> out) const {
  GPUFEED_EXPECTS(f < spec_.size() && out.size() == spec_[f].bytes(),
                  "synthetic::expected: field " + std::to_string(f) + " needs " +
                      (f < spec_.size() ? std::to_string(spec_[f].bytes()) : "?") + " bytes");
  auto const state = mix_seed(options_.seed, index, f) | 1U;  // xorshift state must not be 0
  switch (spec_[f].type) {
    case dtype::f32:
      fill_unit_floats<float>(out, state);
      break;
    case dtype::f64:
      fill_unit_floats<double>(out, state);
      break;
    case dtype::f16:
      fill_unit_halves(out, state, 10, 15);
      break;
    case dtype::bf16:
      fill_unit_halves(out, state, 7, 127);
      break;
    default:
      fill_bits(out, state);
  }
}

void synthetic::read(std::size_t index, sample_view out, read_context const& /*ctx*/) const {
  GPUFEED_EXPECTS(index < size_, "synthetic::read: index " + std::to_string(index) +
                                     " is past the end (" + std::to_string(size_) + " samples)");
  if (options_.sleep.count() > 0) {
    std::this_thread::sleep_for(options_.sleep);
  }
  if (options_.cpu_cost.count() > 0) {
    burn_cpu(options_.cpu_cost);
  }
  if (!options_.write) {
    return;
  }
  for (std::size_t f = 0; f < spec_.size(); ++f) {
    expected(index, f, out.bytes(f));
  }
}

}  // namespace gpufeed
