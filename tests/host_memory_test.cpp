// A ring whose host memory comes from the dataset's source (detail::adapted_dataset::host_memory:
// memory that worker processes share): every slot, the ones held batches add included, lies in
// memory the source gave, each asked for once, and the source lives as long as any batch.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

#include "gpufeed/gpufeed.hpp"
#include "support/sourced_dataset.hpp"
#include "support/test_datasets.hpp"

namespace gpufeed {
namespace {

// Hands out page-aligned blocks and remembers them.
class recording_source final : public detail::host_memory_source {
 public:
  ~recording_source() override {
    for (auto const& b : blocks_) ::operator delete (b.data, std::align_val_t{4096});
    alive_ = false;
  }
  std::byte* slot_memory(std::size_t id, std::size_t bytes) override {
    std::lock_guard const lock{mutex_};
    auto* p = static_cast<std::byte*>(::operator new (bytes, std::align_val_t{4096}));
    blocks_.push_back({id, p, bytes});
    return p;
  }
  struct block {
    std::size_t id;
    std::byte* data;
    std::size_t bytes;
  };
  std::vector<block> blocks() const {
    std::lock_guard const lock{mutex_};
    return blocks_;
  }
  bool holds(void const* p) const {
    std::lock_guard const lock{mutex_};
    auto const* b = static_cast<std::byte const*>(p);
    for (auto const& blk : blocks_) {
      if (b >= blk.data && b < blk.data + blk.bytes) return true;
    }
    return false;
  }
  static inline bool alive_ = false;

 private:
  mutable std::mutex mutex_;
  std::vector<block> blocks_;
};

TEST(HostMemory, EverySlotComesFromTheSourceOnce) {
  auto source = std::make_shared<recording_source>();
  auto data =
      std::make_shared<test::sourced_dataset>(std::make_shared<test::echo_dataset>(100), source);
  loader l{data, {.batch_size = 4, .workers = 2, .prefetch_depth = 3}};
  EXPECT_EQ(source->blocks().size(), 3U);
  std::vector<batch> held;  // keep every batch alive: the ring grows, from the source too
  while (auto b = l.next()) {
    EXPECT_TRUE(source->holds(b->host_field(0).data())) << "batch " << b->sequence();
    held.push_back(std::move(*b));
  }
  auto const blocks = source->blocks();
  EXPECT_GT(blocks.size(), 3U);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(blocks[i].id, i) << "each slot's memory is asked for once, in order";
  }
  ASSERT_EQ(held.size(), 25U);
  for (auto const& b : held) {
    EXPECT_TRUE(test::echo_content_matches(b, 0)) << "batch " << b.sequence();
  }
}

TEST(HostMemory, TheSourceOutlivesTheLoaderWhileABatchLives) {
  std::optional<batch> kept;
  {
    auto source = std::make_shared<recording_source>();
    recording_source::alive_ = true;
    loader l{std::make_shared<test::sourced_dataset>(std::make_shared<test::echo_dataset>(20),
                                                     std::move(source)),
             {.batch_size = 4, .workers = 1}};
    kept = l.next();
  }
  ASSERT_TRUE(kept);
  EXPECT_TRUE(recording_source::alive_) << "the batch's memory is the source's";
  kept.reset();
  EXPECT_FALSE(recording_source::alive_);
}

}  // namespace
}  // namespace gpufeed
