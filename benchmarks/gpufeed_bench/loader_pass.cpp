#include "loader_pass.hpp"

#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>

#include "bench_clock.hpp"

namespace gpufeed::bench {

gpufeed::batch next_batch(gpufeed::loader& source, std::uint64_t* epoch_ends) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (auto next = source.next()) return std::move(*next);
    if (epoch_ends != nullptr) ++*epoch_ends;
  }
  throw std::runtime_error{"the loader delivered an empty epoch"};
}

consumed consume(gpufeed::loader& source, std::size_t batches, bool record_slots) {
  consumed result;
  std::unordered_map<std::uintptr_t, std::uint32_t> slot_index;
  if (record_slots) result.slot_sequence.reserve(batches);
  while (result.batches < batches) {
    auto next = next_batch(source, &result.epoch_ends);
    if (record_slots) {
      auto const address = reinterpret_cast<std::uintptr_t>(next.field(0).data());
      auto const [at, added] =
          slot_index.try_emplace(address, static_cast<std::uint32_t>(result.slots.size()));
      if (added) result.slots.push_back(address);
      result.slot_sequence.push_back(at->second);
    }
    result.samples += next.size();
    ++result.batches;
    next.release();
  }
  return result;
}

timed_run time_batches(gpufeed::loader& source, std::size_t warmup, std::size_t batches,
                       bool record_slots, std::function<void()> const& finish) {
  consume(source, warmup);
  timed_run run;
  run.before = source.snapshot();
  auto const start = bench_clock::now();
  run.delivered = consume(source, batches, record_slots);
  if (finish) finish();
  run.seconds = seconds_between(start, bench_clock::now());
  run.after = source.snapshot();
  return run;
}

void run_step(std::chrono::nanoseconds length, bool spin) {
  if (length.count() <= 0) return;
  auto const until = bench_clock::now() + length;
  if (spin) {
    while (bench_clock::now() < until) {
    }
  } else {
    std::this_thread::sleep_until(until);
  }
}

}  // namespace gpufeed::bench
