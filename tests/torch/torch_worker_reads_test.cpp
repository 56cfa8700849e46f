// gpufeed::torch's reads on its workers, as libtorch's loader makes them: nothing is read on the
// thread that makes the loader, get()s that wait for one another all run, a failing get() arrives
// as libtorch's WorkerException with gpufeed's context, a stuck one times out, and a dataset
// without a size is refused when the loader is made.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpufeed/torch.hpp"
#include "support/test_datasets.hpp"
#include "torch/torch_test_datasets.hpp"

namespace {

namespace gt = gpufeed::torch;
using torch::data::DataLoaderOptions;
using torch::data::samplers::SequentialSampler;
using torch::data::transforms::Stack;
using torch_test::indices_in;
using torch_test::rows_dataset;

// Records the thread of every get(); get() of `bad` throws.
class thread_recording_dataset : public torch::data::datasets::Dataset<thread_recording_dataset> {
 public:
  struct record {
    std::mutex mutex;
    std::vector<std::thread::id> threads;
  };
  thread_recording_dataset(std::size_t n, std::int64_t bad)
      : n_{n}, bad_{bad}, record_{std::make_shared<record>()} {}
  torch::data::Example<> get(std::size_t index) override {
    {
      std::lock_guard const lock{record_->mutex};
      record_->threads.push_back(std::this_thread::get_id());
    }
    if (static_cast<std::int64_t>(index) == bad_) {
      throw std::invalid_argument{"example " + std::to_string(index) + " is bad"};
    }
    return {torch::full({3}, static_cast<double>(index)), torch::tensor(std::int64_t{1})};
  }
  torch::optional<std::size_t> size() const override { return n_; }
  [[nodiscard]] std::shared_ptr<record> shared() const { return record_; }

 private:
  std::size_t n_;
  std::int64_t bad_;
  std::shared_ptr<record> record_;
};

// `parties` workers each read one example and wait until all have arrived, then return in the
// order `release` names their copies (each worker reads through a copy of its own). A loader
// that reads on fewer threads than that, or reads first on its own thread, would wait for
// ever: the wait gives up after a while and throws instead.
class barrier_dataset : public torch::data::datasets::Dataset<barrier_dataset> {
 public:
  struct meeting {
    std::mutex mutex;
    std::condition_variable changed;
    std::size_t arrived = 0;
    std::size_t copies = 0;
    std::size_t released = 0;  // how many of `release` have returned
  };
  barrier_dataset(std::vector<std::size_t> release)
      : release_{std::move(release)}, meeting_{std::make_shared<meeting>()} {}
  barrier_dataset(barrier_dataset const& other)
      : torch::data::datasets::Dataset<barrier_dataset>{other},
        release_{other.release_},
        meeting_{other.meeting_} {
    std::lock_guard const lock{meeting_->mutex};
    copy_ = meeting_->copies++;
  }
  barrier_dataset& operator=(barrier_dataset const&) = delete;
  ~barrier_dataset() override = default;

  torch::data::Example<> get(std::size_t index) override {
    std::unique_lock lock{meeting_->mutex};
    ++meeting_->arrived;
    meeting_->changed.notify_all();
    auto const limit = std::chrono::seconds{30};
    if (!meeting_->changed.wait_for(lock, limit,
                                    [&] { return meeting_->arrived >= release_.size(); })) {
      throw std::runtime_error{"only " + std::to_string(meeting_->arrived) + " of " +
                               std::to_string(release_.size()) + " readers met"};
    }
    if (!meeting_->changed.wait_for(lock, limit, [&] {
          return meeting_->released < release_.size() &&
                 release_[meeting_->released] == copy_ % release_.size();
        })) {
      throw std::runtime_error{"copy " + std::to_string(copy_) + " was never released"};
    }
    ++meeting_->released;
    meeting_->changed.notify_all();
    return {torch::full({2}, static_cast<double>(index)),
            torch::tensor(static_cast<std::int64_t>(index))};
  }
  torch::optional<std::size_t> size() const override { return release_.size(); }

 private:
  std::vector<std::size_t> release_;
  std::shared_ptr<meeting> meeting_;
  std::size_t copy_ = 0;  // the prototype's number is never read: only copies read
};

TEST(torch_worker_reads_test, AnExampleOfAnotherShapeIsAnErrorNamingItsIndex) {
  rows_dataset const data{16, /*odd_one=*/6};
  auto loader =
      gt::make_data_loader<SequentialSampler>(rows_dataset{data}.map(Stack<>()), std::size_t{4});
  ASSERT_TRUE(loader->next().has_value());
  try {
    (void)loader->next();
    FAIL() << "batch 1 holds example 6, whose shape differs";
  } catch (gt::worker_exception const& e) {
    EXPECT_EQ(e.index(), 6U);
    std::string const text = gpufeed::test::nested_message(e.context());
    EXPECT_NE(text.find("example 6"), std::string::npos) << text;
    EXPECT_NE(text.find("[3,4,4]"), std::string::npos) << text;
    EXPECT_NE(text.find("[3,5,4]"), std::string::npos) << text;
  }
}

TEST(torch_worker_reads_test, MakingTheLoaderReadsNothingOnTheCallingThread) {
  thread_recording_dataset data{12, -1};
  auto const record = data.shared();
  auto loader = gt::make_data_loader<SequentialSampler>(std::move(data).map(Stack<>()),
                                                        DataLoaderOptions(4).workers(2));
  std::int64_t samples = 0;
  for (auto& b : *loader) samples += b.size();
  EXPECT_EQ(samples, 12);
  loader->join();  // the workers may have read ahead into the next epoch: let them stop
  std::lock_guard const lock{record->mutex};
  EXPECT_GE(record->threads.size(), 12U) << "every example of the epoch is read";
  for (auto const& id : record->threads) {
    EXPECT_NE(id, std::this_thread::get_id()) << "get() ran on the thread that made the loader";
  }
}

TEST(torch_worker_reads_test, AFailingFirstExampleArrivesAsAWorkerExceptionNamingIt) {
  for (std::size_t workers : {0U, 1U, 3U}) {
    SCOPED_TRACE(std::to_string(workers) + " workers");
    auto loader = gt::make_data_loader<SequentialSampler>(
        thread_recording_dataset{8, 0}.map(Stack<>()), DataLoaderOptions(4).workers(workers));
    auto it = loader->begin();
    try {
      (void)*it;
      FAIL() << "batch 0 holds example 0, whose get() throws";
    } catch (torch::data::WorkerException const& e) {
      // libtorch's type, message and original exception, as a program written for it expects.
      EXPECT_EQ(std::string{e.what()},
                "Caught exception in DataLoader worker thread. Original message: example 0 is bad");
      EXPECT_THROW(std::rethrow_exception(e.original_exception), std::invalid_argument);
      // gpufeed's context on the same object.
      auto const* ours = dynamic_cast<gt::worker_exception const*>(&e);
      ASSERT_NE(ours, nullptr);
      EXPECT_EQ(ours->index(), 0U);
      EXPECT_EQ(ours->epoch(), 0U);
      EXPECT_EQ(ours->failures().size(), 1U);
      std::string const context = ours->context().what();
      EXPECT_NE(context.find("sample 0 (epoch 0"), std::string::npos) << context;
      EXPECT_EQ(gpufeed::test::nested_message(ours->context()), "example 0 is bad");
    }
    EXPECT_EQ(indices_in(it->data), (std::vector<std::int64_t>{4, 5, 6, 7}));  // then batch 1
  }
}

TEST(torch_worker_reads_test, AWorkerExceptionIsOneStdExceptionListingTheBatchsFailures) {
  // Odd examples throw: batch 0 (examples 0-3) has two failures.
  struct odd_fail : torch::data::datasets::Dataset<odd_fail> {
    torch::data::Example<> get(std::size_t index) override {
      if (index % 2 == 1) throw std::out_of_range{"odd example " + std::to_string(index)};
      return {torch::zeros({2}), torch::zeros({1})};
    }
    torch::optional<std::size_t> size() const override { return 8; }
  };
  auto loader = gt::make_data_loader<SequentialSampler>(odd_fail{}.map(Stack<>()),
                                                        DataLoaderOptions(4).workers(2));
  try {
    (void)loader->next();
    FAIL() << "batch 0 holds examples 1 and 3, whose get() throws";
  } catch (std::exception const& e) {  // one std::exception base: this handler matches
    auto const* ours = dynamic_cast<gt::worker_exception const*>(&e);
    ASSERT_NE(ours, nullptr) << e.what();
    ASSERT_EQ(ours->failures().size(), 2U);
    EXPECT_EQ(ours->failures()[0].index, 1U);
    EXPECT_EQ(ours->failures()[1].index, 3U);
    EXPECT_EQ(ours->index(), 1U);
    EXPECT_EQ(std::string{e.what()},
              "Caught exception in DataLoader worker thread. Original message: odd example 1");
    std::string const context = ours->context().what();
    EXPECT_NE(context.find("sample 3"), std::string::npos) << context;
  }
}

TEST(torch_worker_reads_test, ReadsThatWaitForEveryWorkerAllRunAndBatchesKeepTheirOrder) {
  std::vector<std::size_t> const release{3, 7, 0, 5, 4, 8, 2, 1, 9, 6};
  auto loader = gt::make_data_loader(
      barrier_dataset{release}.map(Stack<>()), SequentialSampler{release.size()},
      DataLoaderOptions().batch_size(1).workers(release.size()).enforce_ordering(true));
  std::vector<std::int64_t> order;
  for (auto& b : *loader) order.push_back(b.target.item<std::int64_t>());
  std::vector<std::int64_t> want(release.size());
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(order, want);
}

TEST(torch_worker_reads_test, AGetThatNeverReturnsTimesOut) {
  struct stuck : torch::data::datasets::Dataset<stuck> {
    std::shared_ptr<std::atomic<bool>> released = std::make_shared<std::atomic<bool>>(false);
    torch::data::Example<> get(std::size_t) override {
      while (!released->load()) std::this_thread::sleep_for(std::chrono::milliseconds{1});
      return {torch::zeros({1}), torch::zeros({1})};
    }
    torch::optional<std::size_t> size() const override { return 4; }
  };
  stuck data;
  auto const released = data.released;
  auto loader =
      gt::make_data_loader(std::move(data).map(Stack<>()),
                           DataLoaderOptions(2).workers(1).timeout(std::chrono::milliseconds{20}));
  try {
    (void)*loader->begin();
    ADD_FAILURE() << "the first batch never comes, and the wait has a limit";
  } catch (gpufeed::timeout_error const& e) {
    // libtorch's word, which programs ported from it look for, then gpufeed's explanation.
    EXPECT_NE(std::string{e.what()}.find("Timeout in DataLoader"), std::string::npos) << e.what();
    EXPECT_NE(std::string{e.what()}.find("first batch"), std::string::npos) << e.what();
  }
  released->store(true);
}

TEST(torch_worker_reads_test, ADatasetWithoutASizeIsRefusedWhenTheLoaderIsMade) {
  struct unsized : torch::data::datasets::Dataset<unsized> {
    torch::data::Example<> get(std::size_t i) override {
      return {torch::ones(static_cast<std::int64_t>(i)), torch::ones(1)};
    }
    torch::optional<std::size_t> size() const override { return torch::nullopt; }
  };
  try {
    (void)gt::make_data_loader(unsized{});
    FAIL() << "a dataset without a size was accepted";
  } catch (gpufeed::logic_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("size()"), std::string::npos) << e.what();
    // libtorch's sentence for it, which programs ported from libtorch look for.
    EXPECT_NE(std::string{e.what()}.find(
                  "Expected the dataset to be sized in order to construct the Sampler"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
