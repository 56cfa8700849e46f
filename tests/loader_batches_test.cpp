// The loader's batches: fields of batch shape, a move-only lease, a loader moved mid-epoch or
// used after a move, and sizes that memory cannot hold, refused before anything is allocated.

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/host_resources.hpp"
#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::loader;
using namespace gpufeed::test;  // NOLINT(google-build-using-namespace): test doubles

// ------------------------------------------------------------------------------------------------
// Batches and fields.

TEST(loader_test, FieldsHaveBatchShape) {
  std::size_t const n = 10;
  auto data = std::make_shared<echo_dataset>(n, 6);
  auto o = small_options(4, 2);
  loader l{data, o};
  std::vector<std::size_t> sizes;
  while (auto b = l.next()) {
    ASSERT_EQ(b->fields(), 3U);
    auto index = b->field(0);
    auto context = b->field(1);
    auto payload = b->field("payload");
    EXPECT_EQ(index.name(), "index");
    EXPECT_EQ(index.type(), gpufeed::dtype::i64);
    ASSERT_EQ(index.rank(), 1U);
    EXPECT_EQ(index.shape()[0], static_cast<std::int64_t>(b->size()));
    ASSERT_EQ(context.rank(), 2U);
    EXPECT_EQ(context.shape()[0], static_cast<std::int64_t>(b->size()));
    EXPECT_EQ(context.shape()[1], 3);
    ASSERT_EQ(payload.rank(), 2U);
    EXPECT_EQ(payload.shape()[1], 6);
    EXPECT_EQ(payload.type(), gpufeed::dtype::u8);
    EXPECT_EQ(payload.bytes(), b->size() * 6);
    EXPECT_EQ(b->field(2).data(), payload.data());
    EXPECT_THROW((void)b->field("no_such_field"), gpufeed::logic_error);
    EXPECT_THROW((void)index.as<std::int32_t>(), gpufeed::logic_error);
    EXPECT_TRUE(b->skipped().empty());
    sizes.push_back(b->size());
  }
  EXPECT_EQ(sizes, (std::vector<std::size_t>{4, 4, 2}));
}

TEST(loader_test, BatchIsAMoveOnlyLease) {
  auto data = std::make_shared<echo_dataset>(16, 4);
  loader l{data, small_options(4, 2)};
  auto b = l.next();
  ASSERT_TRUE(b.has_value());
  ASSERT_TRUE(static_cast<bool>(*b));
  auto const indices = std::vector<std::size_t>(b->indices().begin(), b->indices().end());
  gpufeed::batch moved{std::move(*b)};
  EXPECT_FALSE(static_cast<bool>(*b));  // NOLINT(bugprone-use-after-move): checks the moved-from
  ASSERT_TRUE(static_cast<bool>(moved));
  EXPECT_EQ(std::vector<std::size_t>(moved.indices().begin(), moved.indices().end()), indices);
  EXPECT_TRUE(echo_content_matches(moved, 4));
  gpufeed::batch assigned;
  EXPECT_FALSE(static_cast<bool>(assigned));
  assigned = std::move(moved);
  EXPECT_TRUE(echo_content_matches(assigned, 4));
  assigned.release();
  EXPECT_FALSE(static_cast<bool>(assigned));
  assigned.release();  // twice is harmless
  // Moving a live lease over another one gives the old slot back.
  auto c = l.next();
  auto d = l.next();
  ASSERT_TRUE(c && d);
  *c = std::move(*d);
  EXPECT_EQ(c->sequence(), 2U);
  EXPECT_TRUE(echo_content_matches(*c, 4));
  EXPECT_EQ(l.snapshot().ring_leased, 1U);
}

TEST(loader_test, LoaderCanBeMovedMidEpoch) {
  std::size_t const n = 32;
  auto data = std::make_shared<echo_dataset>(n);
  auto o = small_options(4, 2);
  o.shuffle = true;
  o.seed = 31;
  loader a{data, o};
  auto first = a.next();
  ASSERT_TRUE(first.has_value());
  loader b{std::move(a)};
  auto rest = drain_epoch(b);
  auto want = expected_batches(n, o, 0);
  ASSERT_EQ(rest.size() + 1, want.size());
  EXPECT_EQ(std::vector<std::size_t>(first->indices().begin(), first->indices().end()), want[0]);
  for (std::size_t s = 0; s < rest.size(); ++s) EXPECT_EQ(rest[s].indices, want[s + 1]);
  loader c{data, o};
  c = std::move(b);
  EXPECT_EQ(c.epoch(), 1U);
  EXPECT_EQ(index_lists(drain_epoch(c)), expected_batches(n, o, 1));
}

TEST(loader_test, AMovedFromLoaderSaysSoOnUse) {
  // It once dereferenced a null core (a crash); now every call says what happened.
  auto data = std::make_shared<echo_dataset>(16);
  loader a{data, small_options(4, 2)};
  loader b{std::move(a)};
  auto const says_moved = [](auto&& call) {
    try {
      call();
    } catch (gpufeed::logic_error const& e) {
      return std::string{e.what()}.find("moved from") != std::string::npos;
    }
    return false;
  };
  // NOLINTBEGIN(bugprone-use-after-move): the moved-from loader is what is tested
  EXPECT_TRUE(says_moved([&] { (void)a.next(); }));
  EXPECT_TRUE(says_moved([&] { (void)a.try_next_for(std::chrono::milliseconds{1}); }));
  EXPECT_TRUE(says_moved([&] { a.set_epoch(1); }));
  EXPECT_TRUE(says_moved([&] { (void)a.epoch(); }));
  EXPECT_TRUE(says_moved([&] { (void)a.state(); }));
  EXPECT_TRUE(says_moved([&] { a.restore(b.state()); }));
  EXPECT_TRUE(says_moved([&] { (void)a.snapshot(); }));
  EXPECT_TRUE(says_moved([&] { (void)a.batches_per_epoch(); }));
  EXPECT_TRUE(says_moved([&] { (void)a.batch_bytes(); }));
  EXPECT_TRUE(says_moved([&] { (void)a.options(); }));
  EXPECT_TRUE(says_moved([&] { (void)a.begin(); }));
  // NOLINTEND(bugprone-use-after-move)
  // The loader it moved to works, and a moved-from one can be given a new loader.
  EXPECT_EQ(index_lists(drain_epoch(b)), expected_batches(16, small_options(4, 2), 0));
  a = loader{data, small_options(4, 2)};
  EXPECT_EQ(index_lists(drain_epoch(a)), expected_batches(16, small_options(4, 2), 0));
}

// ------------------------------------------------------------------------------------------------
// Sizes a user can give that memory cannot hold.

TEST(loader_test, AHugeBatchSizeIsRefusedBeforeAnythingIsAllocated) {
  // 2^32 samples a batch: its per-sample lists alone are 96 GiB a slot, and were once asked of
  // the allocator (a plain std::bad_alloc, or worse, the OOM killer). Now the ring is sized
  // against the machine's memory first, and the error names the option.
  auto data = std::make_shared<echo_dataset>(100);
  auto o = small_options(std::size_t{1} << 32, 2);
  auto const rss = rss_bytes();
  try {
    loader l{data, o};
    FAIL() << "a batch of 2^32 samples was accepted";
  } catch (gpufeed::out_of_memory const& e) {
    std::string const what = e.what();
    EXPECT_TRUE(contains_token(what, "batch_size")) << what;
    EXPECT_NE(what.find("4294967296"), std::string::npos) << what;
    EXPECT_NE(what.find("physical memory"), std::string::npos) << what;
  }
  EXPECT_LT(rss_bytes(), rss + (std::size_t{256} << 20)) << "memory was touched before refusing";
}

TEST(loader_test, ARingDeeperThanMemoryIsRefusedNamingPrefetchDepth) {
  // One slot fits, 4096 of them do not (64 MiB each, 256 GiB in all).
  if (gpufeed::detail::physical_memory_bytes() >= (std::size_t{256} << 30)) {
    GTEST_SKIP() << "this machine could hold the ring: the test needs one larger than memory";
  }
  auto data = std::make_shared<echo_dataset>(100, 1 << 20);
  auto o = small_options(64, 2);
  o.prefetch_depth = 4096;
  try {
    loader l{data, o};
    FAIL() << "a 256 GiB ring was accepted";
  } catch (gpufeed::out_of_memory const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("loader_options::prefetch_depth = 4096"), std::string::npos) << what;
  }
}

}  // namespace
