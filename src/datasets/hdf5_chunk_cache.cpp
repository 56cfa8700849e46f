#include "hdf5_chunk_cache.hpp"

#include <algorithm>
#include <atomic>
#include <utility>

namespace gpufeed::detail::h5 {

chunk_cache::found chunk_cache::find_or_claim(std::size_t k, std::size_t capacity) {
  std::unique_lock lock{mutex_};
  ++tick_;
  auto const it =
      std::find_if(entries_.begin(), entries_.end(), [k](auto const& e) { return e.chunk == k; });
  if (it == entries_.end()) return {claim(k, capacity), true, {}};
  it->used = tick_;
  auto data = it->data;
  // A decode under way ends in decoded(), which notifies, on every path.
  decoded_.wait(lock, [&] { return data->ready || !data->error.empty(); });
  std::string error = data->error;
  return {std::move(data), false, std::move(error)};
}

void chunk_cache::decoded(std::shared_ptr<decoded_chunk> const& data, std::string error) {
  {
    std::lock_guard lock{mutex_};
    if (error.empty()) {
      data->ready = true;
    } else {
      data->error = std::move(error);
      std::erase_if(entries_, [&](auto const& e) { return e.data == data; });
    }
  }
  decoded_.notify_all();
}

// Under mutex_: an entry for chunk `k`, in the place of the least recently used decoded chunk
// when the cache is full.
std::shared_ptr<decoded_chunk> chunk_cache::claim(std::size_t k, std::size_t capacity) {
  entry* victim = nullptr;
  if (entries_.size() >= capacity) {
    for (auto& e : entries_) {
      if (e.data->ready && (victim == nullptr || e.used < victim->used)) victim = &e;
    }
  }
  if (victim == nullptr) victim = &entries_.emplace_back();  // room, or all in flight
  if (victim->data != nullptr && victim->data.use_count() == 1) {
    // Only the cache holds it (readers take references under the lock): reuse its buffer. The
    // fence orders the last reader's copy out of it (before its reference was dropped) before
    // the new decode's writes; use_count() alone is a relaxed read.
    std::atomic_thread_fence(std::memory_order_acquire);
    victim->data->ready = false;
    victim->data->error.clear();
  } else {
    victim->data = std::make_shared<decoded_chunk>();
  }
  victim->chunk = k;
  victim->used = tick_;
  return victim->data;
}

}  // namespace gpufeed::detail::h5
