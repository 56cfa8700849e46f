#include "memcpy_peak.hpp"

#include <algorithm>
#include <cstring>
#include <latch>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bench_clock.hpp"
#include "gpufeed/sampler.hpp"

namespace gpufeed::bench {
namespace {

constexpr std::size_t page_bytes = 4096;
constexpr std::align_val_t page_alignment{page_bytes};

struct page_delete {
  void operator()(std::byte* p) const noexcept { ::operator delete(p, page_alignment); }
};
using page_memory = std::unique_ptr<std::byte, page_delete>;

// `bytes` starting `offset` bytes into a page, touched (every page faulted in, as the loader's).
page_memory allocate_slot(std::size_t bytes, std::size_t offset) {
  page_memory memory{static_cast<std::byte*>(::operator new(bytes + page_bytes, page_alignment))};
  std::memset(memory.get() + offset, 1, bytes);
  return memory;
}

}  // namespace

memcpy_peak::memcpy_peak(memcpy_peak_config const& config) : config_{config} {
  if (config_.threads == 0 || config_.dataset_samples == 0 || config_.batch_size == 0 ||
      config_.ring_slots == 0 ||
      config_.source.size() < config_.dataset_samples * config_.sample_bytes) {
    throw std::invalid_argument{"memcpy_peak: inconsistent configuration"};
  }
  run_length_ =
      std::clamp<std::size_t>(config_.batch_size / (4 * std::size_t{config_.threads}), 1, 16);
}

std::size_t memcpy_peak::ring_bytes() const noexcept {
  return config_.ring_slots * config_.batch_size * config_.sample_bytes;
}

// Sample k of the run is position k % n of epoch k / n in the loader's order (whole batches
// divide the dataset), and lands at position k % batch_size of batch k / batch_size's slot.
std::byte* memcpy_peak::ring_view::slot_of(std::size_t batch) const noexcept {
  if (batch >= first_replayed && batch - first_replayed < sequence.size()) {
    return slots[sequence[batch - first_replayed] % slots.size()];
  }
  return slots[batch % slots.size()];
}

void memcpy_peak::copy_until(ring_view ring, std::atomic<std::size_t>& next,
                             std::size_t end) const {
  gpufeed::sampler const order{config_.dataset_samples, config_.shuffle, config_.seed};
  std::size_t const n = config_.dataset_samples;
  std::size_t const bs = config_.batch_size;
  for (;;) {
    std::size_t const first = next.fetch_add(run_length_, std::memory_order_relaxed);
    if (first >= end) return;
    // A run never straddles a batch, as a loader's claims never do.
    std::size_t const last = std::min({first + run_length_, end, (first / bs + 1) * bs});
    for (std::size_t k = first; k < last; ++k) {
      std::byte* const slot = ring.slot_of(k / bs);
      std::size_t const index = order.index(k / n, k % n);
      std::memcpy(slot + (k % bs) * config_.sample_bytes,
                  config_.source.data() + index * config_.sample_bytes, config_.sample_bytes);
    }
  }
}

memcpy_peak_result memcpy_peak::run(ring_replay replay) const {
  std::vector<page_memory> ring;
  std::vector<std::byte*> slots;
  auto const& page_offsets = replay.page_offsets;
  std::size_t const slot_count = std::max(config_.ring_slots, page_offsets.size());
  for (std::size_t s = 0; s < slot_count; ++s) {
    std::size_t const offset = s < page_offsets.size() ? page_offsets[s] % page_bytes : 0;
    ring.push_back(allocate_slot(config_.batch_size * config_.sample_bytes, offset));
    slots.push_back(ring.back().get() + offset);
  }

  std::size_t const warmup_end = config_.warmup_batches * config_.batch_size;
  std::size_t const end = warmup_end + config_.batches * config_.batch_size;
  std::atomic<std::size_t> warmup_next{0};
  std::atomic<std::size_t> timed_next{warmup_end};
  ring_view const view{slots, replay.slot_sequence, config_.warmup_batches};
  std::latch ready{static_cast<std::ptrdiff_t>(config_.threads)};
  std::latch go{1};
  bench_clock::time_point start;
  {
    std::vector<std::jthread> threads;
    threads.reserve(config_.threads);
    for (unsigned t = 0; t < config_.threads; ++t) {
      threads.emplace_back([&, this] {
        copy_until(view, warmup_next, warmup_end);
        ready.count_down();
        go.wait();
        copy_until(view, timed_next, end);
      });
    }
    ready.wait();
    start = bench_clock::now();
    go.count_down();
  }  // joins
  double const seconds = seconds_between(start, bench_clock::now());
  std::uint64_t const samples = config_.batches * config_.batch_size;
  return {seconds, samples, samples * config_.sample_bytes};
}

}  // namespace gpufeed::bench
