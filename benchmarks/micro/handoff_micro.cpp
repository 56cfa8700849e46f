// Micro-benchmark of the loader's hand-off: next() + release() with a dataset that writes
// nothing, so the figure is the loader's own per-batch cost (consumer and workers together).

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "gpufeed/datasets/synthetic.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/log.hpp"

namespace {

void loader_handoff(benchmark::State& state) {
  gpufeed::set_log_level("warn");
  auto const batch_size = static_cast<std::size_t>(state.range(0));
  gpufeed::sample_spec spec;
  spec.add("data", gpufeed::dtype::u8, {64});
  auto const data = std::make_shared<gpufeed::synthetic>(
      std::size_t{1} << 30, spec, gpufeed::synthetic_options{.write = false});
  gpufeed::loader source{data,
                         {.batch_size = batch_size,
                          .workers = static_cast<unsigned>(state.range(1)),
                          .prefetch_depth = 4,
                          .rank = 0U,
                          .world_size = 1U}};
  for (auto _ : state) {
    auto next = source.next();
    benchmark::DoNotOptimize(next->size());
    next->release();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["consumer_stall"] = source.snapshot().stall_fraction();
}

BENCHMARK(loader_handoff)
    ->ArgNames({"batch", "workers"})
    ->Args({1, 1})
    ->Args({64, 1})
    ->Args({64, 2})
    ->Args({256, 2})
    ->UseRealTime();

}  // namespace
