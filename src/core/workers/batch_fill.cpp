#include "core/workers/batch_fill.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "core/nvtx.hpp"
#include "core/units.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/sampler.hpp"

namespace gpufeed::detail {

sample_failure describe_failure(std::exception_ptr cause, unsigned worker, std::size_t index,
                                std::uint64_t epoch) {
  sample_failure f{index, epoch, worker, {}, "unknown exception (not derived from std::exception)",
                   cause};
  try {
    std::rethrow_exception(cause);
  } catch (file_error const& e) {
    f.message = e.what();
    f.file = e.path();
  } catch (std::exception const& e) {
    f.message = e.what();
  } catch (...) {
  }
  return f;
}

std::exception_ptr gather_failures(std::vector<sample_failure> failures) {
  try {
    std::rethrow_exception(failures.front().cause);
  } catch (...) {
    return std::make_exception_ptr(sample_error{std::move(failures)});
  }
}

batch_filler::batch_filler(dataset const& data, slot_layout const& layout,
                           loader_options const& options, epoch_source const& epochs,
                           device_path& device, loader_metrics& metrics,
                           std::atomic<bool> const& stop, staged_reads& staged, unsigned threads)
    : data_{data},
      layout_{layout},
      options_{options},
      epochs_{epochs},
      device_{device},
      metrics_{metrics},
      stop_{stop},
      staged_{staged},
      claims_by_{adapted(data) != nullptr && adapted(data)->reads_claims() ? adapted(data)
                                                                           : nullptr},
      claims_(claims_by_ != nullptr ? threads : 0) {}

bool batch_filler::fill(slot& s, unsigned worker) {
  bool waited_for_copy = false;
  // No lock: claims are atomic, and `count` cannot change while this worker is attached.
  while (!stop_.load(std::memory_order_relaxed) &&
         !s.claims.cancelled.load(std::memory_order_relaxed)) {
    auto const first = s.claims.next.fetch_add(s.grain, std::memory_order_acq_rel);
    if (first >= s.count) {
      return false;  // nothing left: a late worker leaves without touching the slot
    }
    if (!waited_for_copy) {
      // The claim is held: the batch cannot be complete, so the copy still reading the host
      // memory can only be the previous batch's.
      device_.wait_for_copy(s);
      waited_for_copy = true;
    }
    auto const last = std::min(first + s.grain, s.count);
    read_claim(s, first, last, worker);
    if (s.claims.remaining.fetch_sub(last - first, std::memory_order_acq_rel) == last - first) {
      complete(s, worker);
      return true;
    }
  }
  return false;
}

void batch_filler::read_claim(slot& s, std::size_t first, std::size_t last, unsigned worker) {
  if (claims_.empty()) {
    for (auto position = first; position < last; ++position) {
      read_one(s, position, worker);
    }
    return;
  }
  auto const epoch = s.at.epoch;
  auto& reads = claims_[worker];
  reads.clear();
  for (auto position = first; position < last; ++position) {
    auto const index = epochs_.index(s.order.get(), epoch, s.first_position + position);
    s.indices[position] = index;
    s.failures[position] = {};  // as read_one: a cancelled batch's failures must not linger
    if (auto* staged = staged_.take(epoch, s.first_position + position, index)) {
      write_staged(*staged, s, position, worker);
      continue;
    }
    reads.push_back(
        {index, sample_view{layout_, s.memory, position},
         read_context{index, epoch, worker, mix_seed(options_.seed, epoch, index), &stop_}, nullptr,
         false, 0, s.generation});
  }
  if (reads.empty()) {
    return;
  }
  auto const begin = steady_ns();
  metrics_.read_started(worker, s, reads.front().index, begin);
  {
    nvtx_range const range{"gpufeed: read claim"};
    claims_by_->read_each(reads);  // a worker_error passes: the loader cannot go on
  }
  auto const end = steady_ns();
  // Each sample is given an equal share of the claim's time, in claim order.
  auto const n = static_cast<std::int64_t>(reads.size());
  for (std::int64_t k = 0; k < n; ++k) {
    auto const& r = reads[static_cast<std::size_t>(k)];
    if (r.ended) {  // an open-ended epoch's source has no more: the batch is made whole or ends
      s.ended = true;
      s.source = r.source;
    }
    if (r.failure) {
      s.failures[r.out.position()] = {r.failure, worker};
    }
    metrics_.read_finished(worker, begin + (end - begin) * k / n,
                           begin + (end - begin) * (k + 1) / n, r.index, s.at.sequence);
  }
}

void batch_filler::read_one(slot& s, std::size_t position, unsigned worker) {
  auto const epoch = s.at.epoch;
  auto const index = epochs_.index(s.order.get(), epoch, s.first_position + position);
  s.indices[position] = index;
  // Normally settle() has cleared it, but a batch cancelled before its last read never gets
  // there, and its failures must not pass to the slot's next batch.
  s.failures[position] = {};
  if (auto* staged = staged_.take(epoch, s.first_position + position, index)) {
    write_staged(*staged, s, position, worker);
    return;
  }
  read_context const ctx{index, epoch, worker, mix_seed(options_.seed, epoch, index), &stop_};
  auto const begin = steady_ns();
  metrics_.read_started(worker, s, index, begin);
  nvtx_range const range{"gpufeed: read"};
  try {
    data_.read(index, sample_view{layout_, s.memory, position}, ctx);
  } catch (worker_error const&) {
    throw;  // not the sample's failure: the loader cannot go on
  } catch (...) {
    s.failures[position] = {std::current_exception(), worker};
  }
  metrics_.read_finished(worker, begin, steady_ns(), index, s.at.sequence);
}

void batch_filler::write_staged(staged_read& staged, slot& s, std::size_t position,
                                unsigned worker) {
  auto const begin = steady_ns();
  metrics_.read_started(worker, s, staged.index, begin);
  if (staged.failure) {
    s.failures[position] = {std::move(staged.failure), staged.worker};
  } else {
    try {
      staged.sample->write(sample_view{layout_, s.memory, position});
    } catch (worker_error const&) {
      throw;
    } catch (...) {
      s.failures[position] = {std::current_exception(), worker};
    }
    staged.sample.reset();  // its data is in the batch now
  }
  metrics_.read_finished(worker, begin, steady_ns(), staged.index, s.at.sequence);
}

void batch_filler::settle(slot& s) {
  s.skipped.clear();
  s.error = nullptr;
  if (s.ended) {  // no batch: nothing was written, and nothing failed that the consumer sees
    for (std::size_t p = 0; p < s.count; ++p) {
      s.failures[p] = {};
    }
    s.delivered = 0;
    return;
  }
  std::vector<sample_failure> failed;  // error_policy::raise: allocated only on a failure
  std::size_t kept = 0;
  for (std::size_t p = 0; p < s.count; ++p) {
    if (!s.failures[p].cause) {
      if (kept != p) {  // close the gap left by a skipped sample (only after a skip)
        for (std::size_t f = 0; f < layout_.spec().size(); ++f) {
          std::memmove(layout_.locate(s.memory, f, kept), layout_.locate(s.memory, f, p),
                       layout_.field_bytes(f));
        }
        s.indices[kept] = s.indices[p];
      }
      ++kept;
      continue;
    }
    if (options_.on_error == error_policy::raise) {
      failed.push_back(
          describe_failure(s.failures[p].cause, s.failures[p].worker, s.indices[p], s.at.epoch));
      ++kept;  // the batch is not delivered; nothing to compact
    } else {
      s.skipped.push_back(s.indices[p]);
    }
    // Released here, before the consumer can see the batch: s.error may still hold it.
    s.failures[p] = {};
  }
  if (!failed.empty()) {
    s.error = gather_failures(std::move(failed));
  }
  s.delivered = kept;
}

void batch_filler::complete(slot& s, unsigned worker) {
  nvtx_range const range{"gpufeed: batch complete"};
  auto const begin = metrics_.tracing() ? steady_ns() : 0;
  settle(s);
  // A batch that raises is never copied, nor one that ended, nor one discarded meanwhile
  // (set_epoch / restore).
  if (!s.error && !s.ended && !s.claims.cancelled.load(std::memory_order_relaxed)) {
    device_.copy_async(s);
  }
  if (metrics_.tracing()) {
    metrics_.batch_completed(worker, begin, steady_ns(), s.at.sequence, s.delivered);
  }
}

}  // namespace gpufeed::detail
