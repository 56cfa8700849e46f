#pragma once
/// @file
/// @brief A dataset of deterministic bytes, for tests, benchmarks and demos.
///
/// @code
/// auto spec = gpufeed::sample_spec{}.add("image", gpufeed::dtype::u8, {32, 32, 3})
///                                   .add("label", gpufeed::dtype::i64, {});
/// auto data = std::make_shared<gpufeed::synthetic>(50'000, spec,
///                                                 gpufeed::synthetic_options{.seed = 7});
/// @endcode

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

#include "gpufeed/dataset.hpp"

namespace gpufeed {

/// @brief How a `synthetic` dataset behaves.
struct synthetic_options {
  /// Seeds the content: the same (seed, index, field) always gives the same bytes.
  std::uint64_t seed = 0;
  /// CPU time each read burns (busy), to stand in for decoding.
  std::chrono::nanoseconds cpu_cost{0};
  /// Time each read sleeps, to stand in for storage latency.
  std::chrono::nanoseconds sleep{0};
  /// When false, read() writes nothing: measures the loader's own overhead.
  bool write = true;
};

/// @brief Sample i's fields are pseudo-random bytes derived from (seed, i, field); integer fields
/// get uniform bits, floating fields values in [0, 1). Thread-safe; holds no data.
class synthetic final : public dataset {
 public:
  synthetic(std::size_t size, sample_spec spec, synthetic_options options = {});
  [[nodiscard]] std::size_t size() const override { return size_; }
  [[nodiscard]] sample_spec spec() const override { return spec_; }
  void read(std::size_t index, sample_view out, read_context const& ctx) const override;

  /// @brief Writes what field `f` of sample `index` holds into `out` (the field's size).
  void expected(std::size_t index, std::size_t f, std::span<std::byte> out) const;

 private:
  std::size_t size_;
  sample_spec spec_;
  synthetic_options options_;
};

}  // namespace gpufeed
