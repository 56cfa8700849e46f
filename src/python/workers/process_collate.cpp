// A collate_fn's batches: the worker process makes the whole batch into a block of the shared
// ring, which grows to the largest batch seen within collate_budget. What a block holds is
// python/gpufeed/_collated.py's format; this side sizes, hands out and reclaims blocks only.
#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpufeed/error.hpp"
#include "python/workers/process_link.hpp"

namespace gpufeed::python::workers {

void process_dataset::collate_each(link& w, std::span<detail::sample_read> reads) const {
  auto const* stop = reads.front().context.stop;
  auto const* slot = reads.front().out.bytes(0).data();
  block_of_slot block;
  {
    std::lock_guard const lock{blocks_mutex_};
    block = blocks_[slot];
  }
  auto const holding = held_by(reads);
  auto const grow_to = [&](std::size_t need) {
    std::lock_guard const lock{blocks_mutex_};
    auto const capacity = std::max(need, largest_batch_ + largest_batch_ / 4);
    if (collate_budget_ > 0 && block_bytes_ + capacity > collate_budget_) {
      throw out_of_memory{
          "gpufeed: collate_fn's batches take " + std::to_string(block_bytes_) +
          " bytes of blocks already, and a batch of " + std::to_string(need) +
          " bytes needs one more, over the budget of " + std::to_string(collate_budget_) +
          " bytes (held_batches_budget); raise held_batches_budget, or make smaller batches"};
    }
    block.offset = arena_->block(capacity);
    block.capacity = capacity;
    block_bytes_ += capacity;
  };
  auto const post = [&](task_kind kind) {
    return exchange(
        w, kind,
        [&](payload_writer& out) {
          out.put<std::uint64_t>(reads.front().context.epoch).put<std::uint64_t>(reads.front().run);
          out.put<std::uint64_t>(block.offset).put<std::uint64_t>(block.capacity);
          if (kind == task_kind::collate) {
            out.put<std::uint32_t>(static_cast<std::uint32_t>(reads.size()));
            for (auto const& r : reads) out.put<std::uint64_t>(r.index);
          }
        },
        holding, stop);
  };
  auto status = post(task_kind::collate);
  for (int attempt = 0;; ++attempt) {
    if (status == reply_status::fatal) throw_fatal(w);
    payload_reader in{std::span<std::byte const>{w.box->payload, w.box->bytes}};
    auto const result = static_cast<collate_result>(in.get<std::uint8_t>());
    if (result == collate_result::ended) {
      // The worker's iterator has no more samples this epoch: its source ended (the loader
      // passes the batch over, and ends the epoch once every worker's has).
      for (auto& r : reads) {
        r.ended = true;
        r.source = w.id;
      }
      return;
    }
    if (result == collate_result::written) {
      block.used = static_cast<std::size_t>(in.get<std::uint64_t>());
      std::lock_guard const lock{blocks_mutex_};
      blocks_[slot] = block;
      largest_batch_ = std::max(largest_batch_, block.used);
      return;
    }
    if (result == collate_result::failed) {
      // The batch is made whole or not at all: its one failure is every sample's.
      std::exception_ptr failure;
      std::vector<sample_view> outs{reads.front().out};
      std::vector<std::size_t> ids{reads.front().index};
      std::span<std::exception_ptr> one{&failure, 1};
      take_records(w, outs, ids, one, sizeof(std::uint8_t));  // after the result
      for (auto& r : reads) r.failure = failure;
      return;
    }
    if (attempt > 0) {
      throw std::runtime_error{"a worker asked twice for a larger block"};
    }
    grow_to(static_cast<std::size_t>(in.get<std::uint64_t>()));
    status = post(task_kind::collate_write);
  }
}

process_dataset::collated process_dataset::collated_batch(std::byte const* slot) const {
  std::lock_guard const lock{blocks_mutex_};
  auto const found = blocks_.find(slot);
  if (found == blocks_.end()) {
    throw std::out_of_range{"gpufeed: no batch was collated into this slot"};
  }
  auto const& b = found->second;
  return {arena_->at(b.offset), b.used};
}

}  // namespace gpufeed::python::workers
