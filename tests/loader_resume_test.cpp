// Resuming the loader: state() and restore() across loaders and worker counts, the state's
// one-line text form, and the state of a chunk-aware shuffle.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::loader;
using namespace gpufeed::test;  // NOLINT(google-build-using-namespace): test doubles

// ------------------------------------------------------------------------------------------------
// Resume.

TEST(loader_test, ResumeContinuesExactly) {
  std::size_t const n = 50;
  auto data = std::make_shared<echo_dataset>(n, 2);
  auto o = small_options(4, 3);
  o.shuffle = true;
  o.seed = 11;
  o.accumulation_steps = 2;
  std::vector<batch_record> ref0;
  std::vector<batch_record> ref1;
  {
    loader l{data, o};
    ref0 = drain_epoch(l, 2);
    ref1 = drain_epoch(l, 2);
  }
  ASSERT_EQ(ref0.size(), 13U);
  for (std::size_t k : {0U, 1U, 5U, 6U, 12U, 13U}) {  // 13: all consumed, before the end
    SCOPED_TRACE(::testing::Message() << "resume after " << k << " batches");
    gpufeed::loader_state state;
    {
      loader a{data, o};
      for (std::size_t i = 0; i < k; ++i) {
        auto b = a.next();
        ASSERT_TRUE(b.has_value());
        EXPECT_EQ(record_of(*b), ref0[i]);
      }
      state = a.state();
    }  // the first loader is gone before the second starts
    EXPECT_EQ(state.epoch, 0U);
    EXPECT_EQ(state.next_sequence, k);
    EXPECT_EQ(state.seed, 11U);
    EXPECT_EQ(state.dataset_size, n);
    EXPECT_EQ(state.batch_size, 4U);
    EXPECT_TRUE(state.shuffle);
    auto text = state.to_string();
    auto parsed = gpufeed::loader_state::parse(text);
    EXPECT_EQ(parsed, state) << text;

    auto o2 = o;
    o2.workers = 5;
    o2.prefetch_depth = 2;
    loader b{data, o2};
    b.restore(parsed);
    EXPECT_EQ(b.epoch(), 0U);
    EXPECT_EQ(b.state(), state);
    auto rest = drain_epoch(b, 2);
    EXPECT_EQ(rest,
              std::vector<batch_record>(ref0.begin() + static_cast<std::ptrdiff_t>(k), ref0.end()));
    EXPECT_EQ(drain_epoch(b, 2), ref1);
  }
}

TEST(loader_test, ResumeAtEpochBoundary) {
  std::size_t const n = 21;
  auto data = std::make_shared<echo_dataset>(n);
  auto o = small_options(4, 2);
  o.shuffle = true;
  o.seed = 4;
  gpufeed::loader_state state;
  std::vector<batch_record> ref1;
  std::vector<batch_record> ref2;
  {
    loader a{data, o};
    (void)drain_epoch(a);
    state = a.state();
    ref1 = drain_epoch(a);
    ref2 = drain_epoch(a);
  }
  EXPECT_EQ(state.epoch, 1U);
  EXPECT_EQ(state.next_sequence, 0U);
  auto o2 = o;
  o2.workers = 4;
  loader b{data, o2};
  b.restore(gpufeed::loader_state::parse(state.to_string()));
  EXPECT_EQ(b.epoch(), 1U);
  EXPECT_EQ(drain_epoch(b), ref1);
  EXPECT_EQ(drain_epoch(b), ref2);
}

TEST(loader_test, RestoreAfterConsumingGoesBack) {
  // restore() also rewinds a loader that has moved on (prefetched work is discarded).
  std::size_t const n = 40;
  auto data = std::make_shared<echo_dataset>(n);
  auto o = small_options(4, 3);
  o.shuffle = true;
  o.seed = 21;
  loader l{data, o};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(l.next().has_value());
  auto state = l.state();
  auto ahead = drain_epoch(l);
  ASSERT_EQ(ahead.size(), 7U);
  l.restore(state);
  EXPECT_EQ(drain_epoch(l), ahead);
}

TEST(loader_test, RestoreRejectsMismatchedState) {
  auto o = small_options(4, 2);
  o.shuffle = true;
  o.seed = 3;
  auto data = std::make_shared<echo_dataset>(40);
  loader source{data, o};
  (void)source.next();
  auto const state = source.state();

  {  // another dataset size
    loader l{std::make_shared<echo_dataset>(41), o};
    EXPECT_THROW(l.restore(state), gpufeed::logic_error);
  }
  {  // another batch size
    auto o2 = o;
    o2.batch_size = 5;
    loader l{data, o2};
    EXPECT_THROW(l.restore(state), gpufeed::logic_error);
  }
  {  // another world size
    auto o2 = o;
    o2.world_size = 2;
    loader l{data, o2};
    EXPECT_THROW(l.restore(state), gpufeed::logic_error);
  }
  {  // another rank
    auto o2 = o;
    o2.world_size = 2;
    o2.rank = 1;
    auto s2 = state;
    s2.world_size = 2;
    s2.rank = 0;
    loader l{data, o2};
    EXPECT_THROW(l.restore(s2), gpufeed::logic_error);
  }
  {  // shuffle switched off
    auto o2 = o;
    o2.shuffle = false;
    loader l{data, o2};
    EXPECT_THROW(l.restore(state), gpufeed::logic_error);
  }
  {  // past the end of the epoch
    loader l{data, o};
    auto s2 = state;
    s2.next_sequence = l.batches_per_epoch() + 1;
    EXPECT_THROW(l.restore(s2), gpufeed::logic_error);
    // The rejected restore left the loader usable, at the start of epoch 0.
    auto records = drain_epoch(l);
    EXPECT_EQ(index_lists(records), expected_batches(40, o, 0));
  }
  {  // the matching loader accepts it
    loader l{data, o};
    EXPECT_NO_THROW(l.restore(state));
    EXPECT_EQ(l.state(), state);
  }
}

TEST(loader_test, StateParseRejectsGarbage) {
  gpufeed::loader_state s;
  s.seed = 0xfeedfacecafebeefULL;
  s.epoch = 12;
  s.next_sequence = 345;
  s.dataset_size = 1'000'000'000'000ULL;
  s.batch_size = 256;
  s.rank = 3;
  s.world_size = 8;
  s.shuffle = true;
  EXPECT_EQ(gpufeed::loader_state::parse(s.to_string()), s);
  EXPECT_EQ(s.to_string().find('\n'), std::string::npos) << "not one line";
  EXPECT_THROW((void)gpufeed::loader_state::parse(""), gpufeed::logic_error);
  EXPECT_THROW((void)gpufeed::loader_state::parse("hello"), gpufeed::logic_error);
  auto text = s.to_string();
  EXPECT_THROW((void)gpufeed::loader_state::parse(text.substr(0, text.size() / 2)),
               gpufeed::logic_error);
}

TEST(loader_test, StateParseRejectsAnythingButItsOwnForm) {
  gpufeed::loader_state s;
  s.seed = 5;
  s.epoch = 2;
  s.next_sequence = 3;
  s.dataset_size = 100;
  s.batch_size = 8;
  s.rank = 1;
  s.world_size = 4;
  s.shuffle = true;
  auto const text = s.to_string();
  auto replace = [&](std::string const& from, std::string const& to) {
    auto out = text;
    auto at = out.find(from);
    EXPECT_NE(at, std::string::npos) << "'" << text << "' has no '" << from << "'";
    if (at != std::string::npos) out.replace(at, from.size(), to);
    return out;
  };
  // A repeated key standing in for a missing one.
  auto const duplicated = replace("epoch=2", "seed=5");
  EXPECT_THROW((void)gpufeed::loader_state::parse(duplicated), gpufeed::logic_error)
      << "accepted '" << duplicated << "'";
  // A rank or world size that does not fit its type must not wrap around.
  auto const huge_rank = replace("rank=1", "rank=4294967297");
  EXPECT_THROW((void)gpufeed::loader_state::parse(huge_rank), gpufeed::logic_error)
      << "accepted '" << huge_rank << "'";
  auto const huge_world = replace("world_size=4", "world_size=4294967300");
  EXPECT_THROW((void)gpufeed::loader_state::parse(huge_world), gpufeed::logic_error)
      << "accepted '" << huge_world << "'";
  // Numbers only.
  EXPECT_THROW((void)gpufeed::loader_state::parse(replace("epoch=2", "epoch=two")),
               gpufeed::logic_error);
  EXPECT_THROW((void)gpufeed::loader_state::parse(replace("epoch=2", "epoch=-2")),
               gpufeed::logic_error);
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Chunk-aware shuffle through the loader.

namespace {
// An index-echo dataset that reports storage chunks, as a chunked HDF5 file does.
class chunked_echo final : public gpufeed::dataset {
 public:
  chunked_echo(std::size_t n, std::size_t chunk) : n_{n}, chunk_{chunk} {}
  std::size_t size() const override { return n_; }
  gpufeed::sample_spec spec() const override {
    return gpufeed::sample_spec{}.add("index", gpufeed::dtype::i64, {});
  }
  void read(std::size_t index, gpufeed::sample_view out,
            gpufeed::read_context const&) const override {
    out.as<std::int64_t>(0)[0] = static_cast<std::int64_t>(index);
  }
  std::size_t storage_chunk() const override { return chunk_; }

 private:
  std::size_t n_, chunk_;
};
}  // namespace

TEST(loader_test, ChunkAwareShuffleFollowsTheSamplerAndResumes) {
  auto data = std::make_shared<chunked_echo>(150, 16);
  auto o = small_options(8, 3);
  o.shuffle = true;
  o.seed = 77;
  o.chunk_window = 2;
  gpufeed::sampler const reference{150, true, 77, 0, 1, {16, 2}};
  loader l{data, o};
  std::vector<std::size_t> seen;
  for (auto& b : l) {
    auto const values = b.field("index").as<std::int64_t>();
    for (std::size_t k = 0; k < b.size(); ++k) {
      ASSERT_EQ(static_cast<std::size_t>(values[k]), b.indices()[k]);
      seen.push_back(b.indices()[k]);
    }
  }
  EXPECT_EQ(seen, reference.epoch_indices(0));

  // The state names the window, and a loader with another window refuses it.
  auto const state = l.state();
  EXPECT_EQ(state.chunk_window, 2U);
  EXPECT_EQ(gpufeed::loader_state::parse(state.to_string()), state);
  auto other = o;
  other.chunk_window = 3;
  loader different{data, other};
  EXPECT_THROW(different.restore(state), gpufeed::logic_error);
}

TEST(loader_test, StateWithoutChunkWindowStillParses) {
  auto const parsed = gpufeed::loader_state::parse(
      "gpufeed-state/1 seed=5 epoch=2 next_sequence=3 dataset_size=100 batch_size=8 rank=1 "
      "world_size=4 shuffle=1");
  EXPECT_EQ(parsed.chunk_window, 0U);
  EXPECT_EQ(parsed.epoch, 2U);
}
