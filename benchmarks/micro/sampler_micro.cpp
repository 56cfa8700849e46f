// Micro-benchmark of gpufeed::sampler::index(): the per-sample cost of the epoch's order.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>

#include "gpufeed/sampler.hpp"

namespace {

void sampler_index(benchmark::State& state) {
  auto const size = static_cast<std::size_t>(state.range(0));
  bool const shuffle = state.range(1) != 0;
  gpufeed::sampler const order{size, shuffle, 42};
  std::size_t position = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(order.index(1, position));
    if (++position == order.shard_size()) position = 0;
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(sampler_index)
    ->ArgNames({"size", "shuffle"})
    ->Args({1'281'167, 0})
    ->Args({1'281'167, 1})
    ->Args({1'000'000'000, 1});

}  // namespace
