// loader_options: validation messages, distributed defaults from the environment.

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpufeed/error.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/options.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::loader_options;
using gpufeed::test::contains_token;
using gpufeed::test::env_guard;

struct bad_option {
  char const* option;  // the option's name, as the message must spell it
  char const* value;   // the bad value, as a token of the message
  std::function<void(loader_options&)> apply;
};

std::vector<bad_option> bad_options() {
  return {
      {"batch_size", "0", [](loader_options& o) { o.batch_size = 0; }},
      {"workers", "0", [](loader_options& o) { o.workers = 0; }},
      {"workers", "1025", [](loader_options& o) { o.workers = 1025; }},
      {"prefetch_depth", "0", [](loader_options& o) { o.prefetch_depth = 0; }},
      {"prefetch_depth", "4097", [](loader_options& o) { o.prefetch_depth = 4097; }},
      {"accumulation_steps", "0", [](loader_options& o) { o.accumulation_steps = 0; }},
      {"rank", "3",
       [](loader_options& o) {
         o.rank = 3;
         o.world_size = 3;
       }},
      {"rank", "11",
       [](loader_options& o) {
         o.rank = 11;
         o.world_size = 4;
       }},
      {"world_size", "0",
       [](loader_options& o) {
         o.rank = 0;
         o.world_size = 0;
       }},
  };
}

loader_options valid_options() {
  loader_options o;
  o.batch_size = 4;
  o.workers = 2;
  o.prefetch_depth = 2;
  o.rank = 0;
  o.world_size = 1;
  return o;
}

TEST(options_test, DefaultsAreValid) {
  env_guard rank{"RANK", std::nullopt};
  env_guard world{"WORLD_SIZE", std::nullopt};
  EXPECT_NO_THROW(gpufeed::validate(loader_options{}));
  EXPECT_NO_THROW(gpufeed::validate(gpufeed::resolve_distributed(loader_options{})));
  EXPECT_NO_THROW(gpufeed::validate(valid_options()));
  auto edge = valid_options();
  edge.workers = 1024;
  edge.prefetch_depth = 4096;
  EXPECT_NO_THROW(gpufeed::validate(edge));
  edge.workers = 1;
  edge.prefetch_depth = 1;
  edge.rank = 7;
  edge.world_size = 8;
  EXPECT_NO_THROW(gpufeed::validate(edge));
}

TEST(options_test, ValidateNamesOptionAndValue) {
  for (auto const& bad : bad_options()) {
    auto o = valid_options();
    bad.apply(o);
    try {
      gpufeed::validate(o);
      ADD_FAILURE() << bad.option << " = " << bad.value << " was accepted";
    } catch (gpufeed::logic_error const& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(bad.option), std::string::npos)
          << "message for " << bad.option << " = " << bad.value << ": " << what;
      EXPECT_TRUE(contains_token(what, bad.value))
          << "message for " << bad.option << " = " << bad.value << ": " << what;
    }
  }
}

TEST(options_test, LoaderConstructorRejectsBadOptions) {
  auto data = std::make_shared<gpufeed::test::echo_dataset>(16);
  for (auto const& bad : bad_options()) {
    auto o = valid_options();
    bad.apply(o);
    try {
      gpufeed::loader l{data, o};
      ADD_FAILURE() << "loader accepted " << bad.option << " = " << bad.value;
    } catch (gpufeed::logic_error const& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(bad.option), std::string::npos) << what;
      EXPECT_TRUE(contains_token(what, bad.value)) << what;
    }
  }
}

TEST(options_test, LoaderRejectsNullDataset) {
  try {
    gpufeed::loader l{nullptr, valid_options()};
    FAIL() << "a null dataset was accepted";
  } catch (gpufeed::logic_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("dataset"), std::string::npos) << e.what();
  }
}

TEST(options_test, NegativeTimeoutIsRejected) {
  auto o = valid_options();
  o.timeout = std::chrono::milliseconds{-5};
  try {
    gpufeed::validate(o);
    FAIL() << "timeout = -5ms was accepted";
  } catch (gpufeed::logic_error const& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("timeout"), std::string::npos) << what;
    EXPECT_NE(what.find("-5"), std::string::npos) << what;
  }
}

// Clears every variable the rank rule reads, so that a case sees only what it sets.
struct launcher_environment {
  env_guard rank{"RANK", std::nullopt};
  env_guard world{"WORLD_SIZE", std::nullopt};
  env_guard local{"LOCAL_RANK", std::nullopt};
  env_guard local_world{"LOCAL_WORLD_SIZE", std::nullopt};
  env_guard group{"GROUP_RANK", std::nullopt};
  env_guard node{"NODE_RANK", std::nullopt};
};

TEST(options_test, DistributedDefaultsComeFromEnvironment) {
  launcher_environment const clean;
  {
    env_guard rank{"RANK", "3"};
    env_guard world{"WORLD_SIZE", "8"};
    auto o = gpufeed::resolve_distributed(loader_options{});
    EXPECT_EQ(o.rank, 3U);
    EXPECT_EQ(o.world_size, 8U);
    // Explicit options win over the environment.
    loader_options explicit_options;
    explicit_options.rank = 1;
    explicit_options.world_size = 2;
    auto kept = gpufeed::resolve_distributed(explicit_options);
    EXPECT_EQ(kept.rank, 1U);
    EXPECT_EQ(kept.world_size, 2U);
    // A world of one given explicitly reads everything, whatever RANK says.
    auto alone = gpufeed::resolve_distributed(loader_options{.world_size = 1});
    EXPECT_EQ(alone.rank, 0U);
  }
  {
    auto o = gpufeed::resolve_distributed(loader_options{});
    EXPECT_EQ(o.rank, 0U);
    EXPECT_EQ(o.world_size, 1U);
  }
}

TEST(options_test, RankComesFromTheLocalRankWhereRankIsMissing) {
  launcher_environment const clean;
  env_guard world{"WORLD_SIZE", "4"};
  {
    env_guard local{"LOCAL_RANK", "1"};  // Lightning's launcher: LOCAL_RANK and NODE_RANK
    env_guard node{"NODE_RANK", "0"};
    EXPECT_EQ(gpufeed::resolve_distributed(loader_options{}).rank, 1U);
  }
  {
    env_guard local{"LOCAL_RANK", "1"};  // torchrun: the node's rank is GROUP_RANK
    env_guard group{"GROUP_RANK", "1"};
    env_guard local_world{"LOCAL_WORLD_SIZE", "2"};
    EXPECT_EQ(gpufeed::resolve_distributed(loader_options{}).rank, 3U);
  }
  {
    env_guard local{"LOCAL_RANK", "0"};
    env_guard node{"NODE_RANK", "1"};
    env_guard local_world{"LOCAL_WORLD_SIZE", "2"};
    EXPECT_EQ(gpufeed::resolve_distributed(loader_options{}).rank, 2U);
  }
}

TEST(options_test, ALargerWorldIsNeverRankZeroByDefault) {
  launcher_environment const clean;
  env_guard world{"WORLD_SIZE", "4"};
  auto const refused = [](loader_options const& o) {
    try {
      (void)gpufeed::resolve_distributed(o);
    } catch (gpufeed::logic_error const& e) {
      return std::string{e.what()};
    }
    return std::string{};
  };
  auto const what = refused(loader_options{});
  EXPECT_NE(what.find("loader_options::world_size = 4"), std::string::npos) << what;
  EXPECT_NE(what.find("RANK"), std::string::npos) << what;
  EXPECT_NE(what.find("Pass loader_options::rank"), std::string::npos) << what;
  {
    // On a second node, the node's size is needed to place a local rank.
    env_guard local{"LOCAL_RANK", "1"};
    env_guard node{"NODE_RANK", "1"};
    EXPECT_FALSE(refused(loader_options{}).empty());
  }
  // The caller's own order needs no rank: the sampler giving it decides.
  EXPECT_TRUE(refused(loader_options{.order = gpufeed::sample_order::given}).empty());
  EXPECT_TRUE(refused(loader_options{.rank = 2}).empty());
}

TEST(options_test, NonNumericEnvironmentIsRejected) {
  for (char const* text : {"abc", "3x", "-1", " "}) {
    env_guard rank{"RANK", text};
    env_guard world{"WORLD_SIZE", "8"};
    EXPECT_THROW((void)gpufeed::resolve_distributed(loader_options{}), gpufeed::logic_error)
        << "RANK='" << text << "'";
  }
  for (char const* text : {"eight", "8.5"}) {
    env_guard rank{"RANK", "0"};
    env_guard world{"WORLD_SIZE", text};
    EXPECT_THROW((void)gpufeed::resolve_distributed(loader_options{}), gpufeed::logic_error)
        << "WORLD_SIZE='" << text << "'";
  }
  {
    env_guard rank{"RANK", "abc"};
    env_guard world{"WORLD_SIZE", "2"};
    try {
      (void)gpufeed::resolve_distributed(loader_options{});
      FAIL() << "RANK=abc was accepted";
    } catch (gpufeed::logic_error const& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("RANK"), std::string::npos) << what;
      EXPECT_NE(what.find("abc"), std::string::npos) << what;
    }
  }
}

TEST(options_test, LoaderTakesRankFromEnvironment) {
  env_guard rank{"RANK", "1"};
  env_guard world{"WORLD_SIZE", "3"};
  std::size_t const n = 29;
  auto data = std::make_shared<gpufeed::test::echo_dataset>(n);
  loader_options o;
  o.batch_size = 4;
  o.workers = 2;
  o.shuffle = true;
  o.seed = 5;
  gpufeed::loader l{data, o};
  EXPECT_EQ(l.options().rank, 1U);
  EXPECT_EQ(l.options().world_size, 3U);
  auto whole = gpufeed::sampler{n, true, 5}.epoch_indices(0);
  auto shard = gpufeed::test::reference_shard(whole, 1, 3, gpufeed::even_shards::pad);
  EXPECT_EQ(l.samples_per_epoch(), shard.size());
  EXPECT_EQ(gpufeed::test::flatten(gpufeed::test::drain_epoch(l)), shard);
}

TEST(options_test, LoaderKeepsOptionsAsGiven) {
  auto data = std::make_shared<gpufeed::test::echo_dataset>(50);
  auto o = valid_options();
  o.batch_size = 7;
  o.workers = 3;
  o.prefetch_depth = 5;
  o.accumulation_steps = 3;
  o.seed = 77;
  o.shuffle = true;
  gpufeed::loader l{data, o};
  EXPECT_EQ(l.options().batch_size, 7U);
  EXPECT_EQ(l.options().workers, 3U);
  EXPECT_EQ(l.options().prefetch_depth, 5U);
  EXPECT_EQ(l.options().accumulation_steps, 3U);
  EXPECT_EQ(l.options().seed, 77U);
  EXPECT_TRUE(l.options().shuffle);
  EXPECT_EQ(l.batches_per_epoch(), 8U);  // 7 full + a kept short one of 1
  EXPECT_EQ(l.steps_per_epoch(), 3U);
  EXPECT_EQ(l.samples_per_epoch(), 50U);
  EXPECT_EQ(l.batch_bytes(), 7U * data->spec().bytes_per_sample());
}

}  // namespace
