// The chunk cache of compressed HDF5 fields on its own: one decode per chunk whatever the number
// of readers, least recently used chunks make room, and a failed decode reaches every reader and
// leaves nothing behind.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include "datasets/hdf5_chunk_cache.hpp"

namespace {

using gpufeed::detail::h5::chunk_cache;

// Reads chunk `k` as a worker does: decodes it when claimed (counting decodes), else takes it.
std::byte read_first_byte(chunk_cache& cache, std::size_t k, std::size_t capacity,
                          std::atomic<int>& decodes) {
  auto [data, decode, error] = cache.find_or_claim(k, capacity);
  if (decode) {
    ++decodes;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // readers arrive meanwhile
    data->bytes.assign(4, static_cast<std::byte>(k));
    cache.decoded(data, "");
  }
  EXPECT_TRUE(error.empty());
  return data->bytes.at(0);
}

TEST(hdf5_chunk_cache, ReadersOfOneChunkWaitForOneDecode) {
  chunk_cache cache;
  std::atomic<int> decodes{0};
  constexpr int readers = 8;
  std::barrier start{readers};
  std::vector<std::thread> threads;
  std::atomic<int> right{0};
  for (int t = 0; t < readers; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      if (read_first_byte(cache, 5, 4, decodes) == std::byte{5}) ++right;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(decodes.load(), 1);
  EXPECT_EQ(right.load(), readers);
}

TEST(hdf5_chunk_cache, TheLeastRecentlyUsedChunkMakesRoom) {
  chunk_cache cache;
  std::atomic<int> decodes{0};
  read_first_byte(cache, 0, 2, decodes);
  read_first_byte(cache, 1, 2, decodes);
  read_first_byte(cache, 0, 2, decodes);  // 1 is now the least recently used
  read_first_byte(cache, 2, 2, decodes);  // evicts 1
  EXPECT_EQ(decodes.load(), 3);
  read_first_byte(cache, 0, 2, decodes);  // still cached
  EXPECT_EQ(decodes.load(), 3);
  read_first_byte(cache, 1, 2, decodes);  // decoded again
  EXPECT_EQ(decodes.load(), 4);
}

TEST(hdf5_chunk_cache, AChunkHeldByAReaderIsNotReusedUnderIt) {
  chunk_cache cache;
  auto held = cache.find_or_claim(0, 1);
  ASSERT_TRUE(held.decode);
  held.data->bytes.assign(4, std::byte{7});
  cache.decoded(held.data, "");
  auto next = cache.find_or_claim(1, 1);  // evicts chunk 0 while `held` still reads it
  ASSERT_TRUE(next.decode);
  EXPECT_NE(next.data, held.data);
  next.data->bytes.assign(4, std::byte{9});
  cache.decoded(next.data, "");
  EXPECT_EQ(held.data->bytes.at(0), std::byte{7});
}

TEST(hdf5_chunk_cache, AFailedDecodeReachesItsWaitersAndIsTriedAgain) {
  chunk_cache cache;
  // A reader that arrives after the failure claims the chunk itself (and decodes it): such a
  // trial says nothing about waiters, so trials repeat until a reader waited on the failure.
  bool a_waiter_saw_the_error = false;
  for (int trial = 0; trial < 20 && !a_waiter_saw_the_error; ++trial) {
    auto first = cache.find_or_claim(3, 4);
    ASSERT_TRUE(first.decode);
    bool saw_error = false;
    std::thread waiter{[&] {
      auto found = cache.find_or_claim(3, 4);
      if (found.decode) {
        found.data->bytes.assign(4, std::byte{3});
        cache.decoded(found.data, "");
        return;
      }
      saw_error = found.error == "corrupt";
    }};
    std::this_thread::sleep_for(std::chrono::milliseconds(20 * (trial + 1)));
    cache.decoded(first.data, "corrupt");
    waiter.join();
    a_waiter_saw_the_error = saw_error;
    // Nothing of the failure stays: the next read decodes again (or finds the waiter's decode).
    auto again = cache.find_or_claim(3, 4);
    if (again.decode) {
      EXPECT_TRUE(again.data->error.empty());
      again.data->bytes.assign(4, std::byte{3});
      cache.decoded(again.data, "");
    }
    EXPECT_TRUE(again.data->ready);
    // Start the next trial without chunk 3: fill the cache with others.
    for (std::size_t k = 10; k < 14; ++k) {
      auto other = cache.find_or_claim(k, 4);
      if (other.decode) cache.decoded(other.data, "");
    }
  }
  EXPECT_TRUE(a_waiter_saw_the_error);
}

}  // namespace
