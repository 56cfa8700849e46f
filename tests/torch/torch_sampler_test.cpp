// gpufeed::torch with libtorch's samplers: instances drawn each epoch as libtorch's loader draws
// them (RandomSampler seeded by torch::manual_seed, the distributed samplers with their rank,
// world size and epoch, samplers of the program's own), sampler types, and the shuffle seed.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpufeed/torch.hpp"
#include "support/text_log_capture.hpp"
#include "torch/torch_test_datasets.hpp"

namespace {

namespace gt = gpufeed::torch;
using torch::data::DataLoaderOptions;
using torch::data::samplers::DistributedRandomSampler;
using torch::data::samplers::DistributedSequentialSampler;
using torch::data::samplers::RandomSampler;
using torch::data::samplers::SequentialSampler;
using torch::data::transforms::Stack;
using torch_test::index_dataset;
using torch_test::indices_in;
using batches = std::vector<std::vector<std::int64_t>>;

// The dataset index of each sample, batch by batch, over `epochs` epochs of range-for.
template <class Loader>
batches order_of(Loader& loader, std::size_t epochs = 1) {
  batches out;
  for (std::size_t e = 0; e < epochs; ++e) {
    for (auto& b : loader) out.push_back(indices_in(b.data));
  }
  return out;
}

template <class Sampler>
batches libtorch_order(std::size_t n, Sampler sampler, DataLoaderOptions options,
                       std::size_t epochs = 1) {
  batches out;
  for (auto const& b : torch_test::libtorch_batches(index_dataset{n}.map(Stack<>()),
                                                    std::move(sampler), options, epochs)) {
    out.push_back(indices_in(b.data));
  }
  return out;
}

std::vector<std::int64_t> flat(batches const& b) {
  std::vector<std::int64_t> out;
  for (auto const& one : b) out.insert(out.end(), one.begin(), one.end());
  return out;
}

TEST(torch_sampler_test, RandomSamplerInstanceGivesLibtorchsOrderUnderTorchManualSeed) {
  // libtorch's loader resets the sampler as each epoch begins (a new torch::randperm); gpufeed
  // draws each epoch from its copy the same way, so the same seed gives the same batches.
  torch::manual_seed(11);
  auto const want = libtorch_order(37, RandomSampler(37), DataLoaderOptions(5).workers(2), 3);
  torch::manual_seed(11);
  auto loader = gt::make_data_loader(index_dataset{37}.map(Stack<>()), RandomSampler(37),
                                     DataLoaderOptions(5).workers(2));
  auto const got = order_of(*loader, 3);
  EXPECT_EQ(got, want);
  ASSERT_EQ(got.size(), 24U);  // 8 batches (7 of 5, 1 of 2) per epoch
  EXPECT_NE(got[0], got[8]) << "the same order in two epochs: the sampler was not reset";
}

TEST(torch_sampler_test, DistributedRandomSamplerGivesEachRankLibtorchsShare) {
  std::set<std::int64_t> covered;
  for (std::size_t rank = 0; rank < 3; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    DistributedRandomSampler sampler(40, 3, rank);
    sampler.set_epoch(4);  // honoured: the epoch the sampler was given with
    auto const want = libtorch_order(40, sampler, DataLoaderOptions(6), 2);
    auto loader = gt::make_data_loader(index_dataset{40}.map(Stack<>()), sampler,
                                       DataLoaderOptions(6).workers(2));
    auto const got = order_of(*loader, 2);
    EXPECT_EQ(got, want);
    auto const one_epoch = flat(got);
    ASSERT_EQ(one_epoch.size(), 2U * 14U);  // ceil(40 / 3) per epoch, padded as libtorch pads
    covered.insert(one_epoch.begin(), one_epoch.end());
  }
  EXPECT_EQ(covered.size(), 40U);
}

TEST(torch_sampler_test, SetEpochReshufflesADistributedSamplerAsItsOwnSetEpoch) {
  DistributedRandomSampler sampler(30, 2, 1);
  auto loader = gt::make_data_loader(index_dataset{30}.map(Stack<>()), sampler,
                                     DataLoaderOptions(4).workers(2));
  auto const epoch0 = order_of(*loader);
  // Without set_epoch the sampler's epoch stays, and so does its order (as with libtorch).
  EXPECT_EQ(order_of(*loader), epoch0);
  for (std::uint64_t epoch : {1U, 2U, 3U}) {
    SCOPED_TRACE("epoch " + std::to_string(epoch));
    loader->set_epoch(epoch);
    DistributedRandomSampler reference(30, 2, 1);
    reference.set_epoch(epoch);
    auto const got = order_of(*loader);
    EXPECT_EQ(got, libtorch_order(30, reference, DataLoaderOptions(4)));
    EXPECT_NE(got, epoch0);
  }
}

TEST(torch_sampler_test, AfterSetEpochEachLaterEpochIsDrawnWithItsNumber) {
  DistributedRandomSampler sampler(30, 2, 0);
  auto loader = gt::make_data_loader(index_dataset{30}.map(Stack<>()), sampler,
                                     DataLoaderOptions(4).workers(2));
  loader->set_epoch(5);
  (void)order_of(*loader);
  auto const got = order_of(*loader);  // epoch 6, drawn ahead as epoch 5 ended
  DistributedRandomSampler reference(30, 2, 0);
  reference.set_epoch(6);
  EXPECT_EQ(got, libtorch_order(30, reference, DataLoaderOptions(4)));
  EXPECT_EQ(loader->loader().epoch(), 7U);
}

TEST(torch_sampler_test, DistributedSequentialSamplerStaysInOrder) {
  auto loader = gt::make_data_loader(index_dataset{20}.map(Stack<>()),
                                     DistributedSequentialSampler(20, 4, 2), std::size_t{2});
  EXPECT_EQ(order_of(*loader, 2), (batches{{10, 11}, {12, 13}, {14}, {10, 11}, {12, 13}, {14}}));
}

TEST(torch_sampler_test, ASamplerTypeOtherThanRandomOrSequentialIsMadeFromTheSize) {
  // As libtorch's make_data_loader<Sampler>: Sampler(size), here one replica, in order.
  auto loader = gt::make_data_loader<DistributedSequentialSampler>(index_dataset{7}.map(Stack<>()),
                                                                   DataLoaderOptions(3));
  EXPECT_EQ(order_of(*loader), (batches{{0, 1, 2}, {3, 4, 5}, {6}}));
}

// A sampler of the program's own: the odd indices, last first; counts its resets.
class odd_backwards : public torch::data::samplers::Sampler<> {
 public:
  explicit odd_backwards(std::size_t size, std::shared_ptr<int> resets)
      : size_{size}, resets_{std::move(resets)} {}
  void reset(torch::optional<std::size_t> new_size = torch::nullopt) override {
    if (new_size.has_value()) size_ = *new_size;
    at_ = size_ - (size_ % 2 == 0 ? 1 : 2);
    done_ = false;
    ++*resets_;
  }
  torch::optional<std::vector<std::size_t>> next(std::size_t batch_size) override {
    std::vector<std::size_t> out;
    while (!done_ && out.size() < batch_size) {
      out.push_back(at_);
      if (at_ < 3) done_ = true;
      at_ -= 2;
    }
    if (out.empty()) return torch::nullopt;
    return out;
  }
  void save(torch::serialize::OutputArchive& /*archive*/) const override {}
  void load(torch::serialize::InputArchive& /*archive*/) override {}

 private:
  std::size_t size_;
  std::shared_ptr<int> resets_;
  std::size_t at_ = 0;
  bool done_ = true;
};

TEST(torch_sampler_test, ASamplerOfTheProgramsOwnIsDrawnOncePerEpoch) {
  auto resets = std::make_shared<int>(0);
  auto loader = gt::make_data_loader(index_dataset{10}.map(Stack<>()), odd_backwards{10, resets},
                                     DataLoaderOptions(2));
  EXPECT_EQ(*resets, 0) << "drawn before the epoch began: torch's generator may be read then";
  EXPECT_EQ(order_of(*loader, 2), (batches{{9, 7}, {5, 3}, {1}, {9, 7}, {5, 3}, {1}}));
  EXPECT_EQ(*resets, 2);
}

TEST(torch_sampler_test, DropLastEndsTheEpochAtAShortBatchAsLibtorch) {
  auto loader = gt::make_data_loader(index_dataset{10}.map(Stack<>()),
                                     odd_backwards{10, std::make_shared<int>(0)},
                                     DataLoaderOptions(2).drop_last(true));
  EXPECT_EQ(order_of(*loader), (batches{{9, 7}, {5, 3}}));
}

TEST(torch_sampler_test, EpochsDrawnAheadStillEndWhereTheyEnd) {
  auto loader = gt::make_data_loader(index_dataset{9}.map(Stack<>()), SequentialSampler(9),
                                     DataLoaderOptions(4).workers(2));
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    std::size_t count = 0;
    for (auto& b : *loader) {
      EXPECT_EQ(b.epoch, epoch);
      EXPECT_EQ(b.sequence, count);
      ++count;
    }
    EXPECT_EQ(count, 3U) << "epoch " << epoch;
  }
  // With next(): the end of each epoch comes once, between the epochs' batches.
  std::vector<bool> ends;
  for (int i = 0; i < 8; ++i) ends.push_back(!loader->next().has_value());
  EXPECT_EQ(ends, (std::vector<bool>{false, false, false, true, false, false, false, true}));
  // An epoch left after its last batch, before its end: begin() starts the next one.
  for (auto& b : *loader) {
    if (b.sequence == 2) break;
  }
  auto const next_epoch = order_of(*loader);
  EXPECT_EQ(next_epoch, (batches{{0, 1, 2, 3}, {4, 5, 6, 7}, {8}}));
}

// Gives every index at once, whatever batch size it is asked for.
class all_at_once : public torch::data::samplers::Sampler<> {
 public:
  explicit all_at_once(std::size_t size) : size_{size} {}
  void reset(torch::optional<std::size_t> /*new_size*/ = torch::nullopt) override {
    given_ = false;
  }
  torch::optional<std::vector<std::size_t>> next(std::size_t /*batch_size*/) override {
    if (given_) return torch::nullopt;
    given_ = true;
    std::vector<std::size_t> out(size_);
    for (std::size_t i = 0; i < size_; ++i) out[i] = i;
    return out;
  }
  void save(torch::serialize::OutputArchive& /*archive*/) const override {}
  void load(torch::serialize::InputArchive& /*archive*/) override {}

 private:
  std::size_t size_;
  bool given_ = false;
};

TEST(torch_sampler_test, ASamplerGivingMoreThanTheBatchSizeIsNamed) {
  auto loader =
      gt::make_data_loader(index_dataset{10}.map(Stack<>()), all_at_once{10}, DataLoaderOptions(4));
  try {
    (void)loader->next();
    FAIL() << "a batch of 10 was accepted with batch_size 4";
  } catch (gpufeed::logic_error const& e) {
    std::string const text = e.what();
    EXPECT_NE(text.find("all_at_once"), std::string::npos) << text;
    EXPECT_NE(text.find("more than batch_size 4"), std::string::npos) << text;
  }
}

TEST(torch_sampler_test, ASamplerIndexBeyondTheDatasetIsNamed) {
  // A DistributedSequentialSampler for 30 samples over a dataset of 10.
  try {
    auto loader = gt::make_data_loader(index_dataset{10}.map(Stack<>()),
                                       DistributedSequentialSampler(30), DataLoaderOptions(4));
    (void)loader->next();
    FAIL() << "indices beyond the dataset were accepted";
  } catch (gpufeed::logic_error const& e) {
    std::string const text = e.what();
    EXPECT_NE(text.find("index 10 at position 10"), std::string::npos) << text;
  }
}

TEST(torch_sampler_test, TorchManualSeedSeedsTheDefaultShuffle) {
  auto order = [](std::uint64_t torch_seed, std::optional<std::uint64_t> seed) {
    torch::manual_seed(torch_seed);
    gt::data_loader_options options{DataLoaderOptions(4)};
    if (seed) options.seed(*seed);
    auto loader = gt::make_data_loader(index_dataset{40}.map(Stack<>()), options);
    return order_of(*loader, 2);
  };
  auto const a = order(1, std::nullopt);
  EXPECT_EQ(order(1, std::nullopt), a);  // reproducible
  EXPECT_NE(order(2, std::nullopt), a);  // and torch's seed is what it depends on
  EXPECT_EQ(order(1, 9), order(2, 9));   // seed(s) wins over torch's
  std::vector<std::int64_t> in_order(40);
  for (std::int64_t i = 0; i < 40; ++i) in_order[static_cast<std::size_t>(i)] = i;
  EXPECT_NE(flat(a), in_order);
}

TEST(torch_sampler_test, SeveralRanksShuffleAlikeWhateverTorchsSeedPerRank) {
  // Programs often seed torch per rank; the ranks' shares must still be disjoint.
  std::set<std::int64_t> seen;
  std::size_t total = 0;
  for (unsigned rank = 0; rank < 2; ++rank) {
    torch::manual_seed(100 + rank);
    gt::data_loader_options options{5};
    options.loader().rank = rank;
    options.loader().world_size = 2;
    auto loader = gt::make_data_loader(index_dataset{41}.map(Stack<>()), options);
    auto const share = flat(order_of(*loader));
    total += share.size();
    seen.insert(share.begin(), share.end());
  }
  // 21 each: every rank reads as many samples, rank 1 its first again.
  EXPECT_EQ(total, 42U);
  EXPECT_EQ(seen.size(), 41U) << "the ranks' shares overlap";
}

TEST(torch_sampler_test, ANonDistributedSamplerOnSeveralRanksIsSaidInTheLog) {
  gpufeed::test::text_log_capture log;
  gt::data_loader_options options{4};
  options.loader().world_size = 2;
  options.loader().rank = 0;
  auto loader = gt::make_data_loader(index_dataset{8}.map(Stack<>()), RandomSampler(8), options);
  EXPECT_EQ(log.count("is not a distributed one"), 1U);
  EXPECT_EQ(flat(order_of(*loader)).size(), 8U);  // every rank reads it all, as with libtorch
}

}  // namespace
