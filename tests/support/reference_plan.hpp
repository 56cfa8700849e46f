#pragma once
// reference_plan: an independent, brute-force cut of an epoch into batches and steps, and the
// batches a loader must deliver by it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpufeed/gpufeed.hpp"

namespace gpufeed::test {

// Reference arithmetic, written independently of the library.

/// One batch of a reference plan.
struct reference_batch {
  std::size_t first = 0;  // shard position
  std::size_t count = 0;
  gpufeed::step_info step;
};

/// Brute force: cut `shard` positions into batches, apply the tail policies, group into steps.
inline std::vector<reference_batch> reference_plan(std::size_t shard, std::size_t batch_size,
                                                   std::size_t accumulation,
                                                   gpufeed::tail_policy last_batch,
                                                   gpufeed::tail_policy last_step) {
  std::vector<reference_batch> batches;
  std::size_t pos = 0;
  while (pos < shard) {
    std::size_t count = std::min(batch_size, shard - pos);
    if (count < batch_size && last_batch == gpufeed::tail_policy::drop) break;
    batches.push_back({pos, count, {}});
    pos += count;
  }
  // Group into steps of `accumulation` micro-batches, one step at a time.
  std::vector<std::vector<std::size_t>> steps;  // batch numbers per step
  for (std::size_t b = 0; b < batches.size(); ++b) {
    if (steps.empty() || steps.back().size() == accumulation) steps.emplace_back();
    steps.back().push_back(b);
  }
  if (!steps.empty() && steps.back().size() < accumulation &&
      last_step == gpufeed::tail_policy::drop) {
    batches.resize(batches.size() - steps.back().size());
    steps.pop_back();
  }
  for (std::size_t s = 0; s < steps.size(); ++s) {
    std::size_t samples = 0;
    for (auto b : steps[s]) samples += batches[b].count;
    for (std::size_t m = 0; m < steps[s].size(); ++m) {
      auto& info = batches[steps[s][m]].step;
      info.step = s;
      info.micro = m;
      info.micros_in_step = steps[s].size();
      info.samples_in_step = samples;
      info.last_micro = m + 1 == steps[s].size();
      info.short_step = samples < accumulation * batch_size;
    }
  }
  return batches;
}

/// The shard of `rank`: positions rank, rank + W, ... of the whole-epoch order `order`, evened
/// out so that every rank has as many: padded with the rank's first sample (the epoch's first
/// when the rank has none) to ceil(n / W), or trimmed to floor(n / W).
inline std::vector<std::size_t> reference_shard(std::vector<std::size_t> const& order,
                                                unsigned rank, unsigned world_size,
                                                gpufeed::even_shards evening) {
  std::vector<std::size_t> out;
  for (std::size_t p = rank; p < order.size(); p += world_size) out.push_back(order[p]);
  auto const n = order.size();
  if (evening == gpufeed::even_shards::trim) {
    out.resize(n / world_size);
  } else if (out.size() < (n + world_size - 1) / world_size) {
    out.push_back(out.empty() ? order.front() : out.front());
  }
  return out;
}

/// The batches (as index lists) a loader must deliver in `epoch`, from the library's sampler
/// order of the whole epoch, the reference shard and the reference plan.
inline std::vector<std::vector<std::size_t>> expected_batches(std::size_t n,
                                                              gpufeed::loader_options const& o,
                                                              std::uint64_t epoch) {
  auto const whole = gpufeed::sampler{n, o.shuffle, o.seed}.epoch_indices(epoch);
  auto const order =
      reference_shard(whole, o.rank.value_or(0), o.world_size.value_or(1),
                      o.last_batch == gpufeed::tail_policy::keep ? gpufeed::even_shards::pad
                                                                 : gpufeed::even_shards::trim);
  std::vector<std::vector<std::size_t>> out;
  for (auto const& b : reference_plan(order.size(), o.batch_size, o.accumulation_steps,
                                      o.last_batch, o.last_step)) {
    out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(b.first),
                     order.begin() + static_cast<std::ptrdiff_t>(b.first + b.count));
  }
  return out;
}

}  // namespace gpufeed::test
