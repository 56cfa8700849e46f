// The loader's way into the CUDA stage, with a stand-in stage (no GPU needed): which steps of a
// batch's path enter it and when, that a worker waits only for the copy it must wait for, and
// that a failure there names the batch and is never counted as a delivery.

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/device/device_layout.hpp"
#include "core/device/device_path.hpp"
#include "core/epochs/epoch_source.hpp"
#include "core/loader_core.hpp"
#include "core/metrics/loader_metrics.hpp"
#include "core/ring/ring.hpp"
#include "core/ring/ring_memory.hpp"
#include "core/workers/batch_fill.hpp"
#include "support/test_datasets.hpp"

#if defined(GPUFEED_WITH_CUDA)
#include "gpufeed/cuda/error.hpp"
#endif

namespace {

using gpufeed::detail::device_stage;
using gpufeed::detail::slot_layout;
using namespace gpufeed::test;  // NOLINT(google-build-using-namespace): test doubles

// What the stand-in stage and the dataset did, in order.
struct event_log {
  std::mutex mutex;
  std::vector<std::string> events;
  void add(std::string event) {
    std::lock_guard const lock{mutex};
    events.push_back(std::move(event));
  }
  std::vector<std::string> all() {
    std::lock_guard const lock{mutex};
    return events;
  }
  std::size_t count(std::string const& prefix) {
    std::lock_guard const lock{mutex};
    std::size_t n = 0;
    for (auto const& e : events) n += e.rfind(prefix, 0) == 0 ? 1U : 0U;
    return n;
  }
};

// Throws as the CUDA stage does: a cuda_error where CUDA is built, else a runtime_error.
[[noreturn]] void fail_as_cuda(char const* what) {
#if defined(GPUFEED_WITH_CUDA)
  throw gpufeed::cuda_error{cudaErrorLaunchFailure, what};
#else
  throw std::runtime_error{what};
#endif
}

// A stage in host memory: "device" memory is a second buffer the copy fills. Fails the n-th call
// of a step when told to (0: never).
class fake_stage final : public device_stage {
 public:
  struct failures {
    std::size_t wait = 0;
    std::size_t copy = 0;
    std::size_t hand_off = 0;
    bool plain = false;  // the hand-off throws std::invalid_argument, as a stage's own check may
  };

  fake_stage(slot_layout const& host, std::size_t slots, std::size_t max_slots,
             std::shared_ptr<event_log> log, failures fail)
      : host_{host}, layout_{host, {}}, log_{std::move(log)}, fail_{fail} {
    for (std::size_t i = 0; i < std::max(slots, max_slots); ++i) {
      parts_.push_back(gpufeed::detail::allocate_resident(host.slot_bytes(), 256, "fake host"));
      devices_.push_back(gpufeed::detail::allocate_resident(host.slot_bytes(), 256, "fake dev"));
    }
    count_ = slots;
  }

  std::byte* host_memory(std::size_t id) const noexcept override { return parts_[id].get(); }
  std::byte* device_memory(std::size_t id) const noexcept override { return devices_[id].get(); }
  gpufeed::detail::device_layout const& layout() const noexcept override { return layout_; }
  int device() const noexcept override { return 0; }
  void bind_worker_thread() override {}
  void wait_host_free(std::size_t id) override {
    log_->add("wait " + std::to_string(id));
    if (++waits_ == fail_.wait) fail_as_cuda("fake: the wait for the copy failed");
  }
  void copy_async(std::size_t id, std::size_t samples) override {
    log_->add("copy " + std::to_string(id));
    if (++copies_ == fail_.copy) fail_as_cuda("fake: the copy failed");
    std::memcpy(devices_[id].get(), parts_[id].get(), host_.used_bytes(samples));
  }
  void hand_off(std::size_t id, gpufeed::stream_view) override {
    log_->add("hand_off " + std::to_string(id));
    if (++hand_offs_ == fail_.hand_off) {
      if (fail_.plain) throw std::invalid_argument{"fake: the stage refused the stream"};
      fail_as_cuda("fake: the hand-off failed");
    }
  }
  void use_on(std::size_t id, gpufeed::stream_view) override {
    log_->add("use_on " + std::to_string(id));
  }
  void release(std::size_t id) noexcept override { log_->add("release " + std::to_string(id)); }
  std::size_t add_slot() override { return count_++; }
  void add_to(gpufeed::stats& out) const override { out.device = 0; }

 private:
  slot_layout const& host_;
  gpufeed::detail::device_layout layout_;
  std::shared_ptr<event_log> log_;
  failures fail_;
  std::vector<gpufeed::detail::aligned_bytes> parts_;
  std::vector<gpufeed::detail::aligned_bytes> devices_;
  std::size_t count_ = 0;
  std::atomic<std::size_t> waits_{0};
  std::atomic<std::size_t> copies_{0};
  std::atomic<std::size_t> hand_offs_{0};
};

gpufeed::stream_view some_stream() {
  // Never used as a stream: the stand-in stage only records it.
  return gpufeed::stream_view{reinterpret_cast<gpufeed::stream_view::native_type>(0x1000)};
}

// A loader core on the "CUDA path" with the stand-in stage.
std::shared_ptr<gpufeed::detail::loader_core> core_with(std::shared_ptr<gpufeed::dataset> data,
                                                        gpufeed::loader_options o,
                                                        std::shared_ptr<event_log> log,
                                                        fake_stage::failures fail) {
  o.target = gpufeed::placement::cuda;
  o.consumer_stream = some_stream();
  o = gpufeed::resolve_distributed(o);
  gpufeed::validate(o);
  auto core = std::make_shared<gpufeed::detail::loader_core>(
      std::move(data), o,
      [log, fail](slot_layout const& host, std::size_t slots, std::size_t max_slots,
                  gpufeed::loader_options const&) -> std::unique_ptr<device_stage> {
        return std::make_unique<fake_stage>(host, slots, max_slots, log, fail);
      });
  core->start();
  return core;
}

// A dataset that logs each read, so that the order of reads and stage steps can be checked.
class logged_reads final : public echo_dataset {
 public:
  logged_reads(std::size_t size, std::shared_ptr<event_log> log)
      : echo_dataset{size}, log_{std::move(log)} {}

 protected:
  void before_read(std::size_t index, gpufeed::read_context const&) const override {
    log_->add("read " + std::to_string(index));
  }

 private:
  std::shared_ptr<event_log> log_;
};

// ------------------------------------------------------------------------------------------------
// A worker waits only for the copy it must wait for.

TEST(device_path_test, ALateWorkerOnAClaimedBatchWaitsForNoCopy) {
  auto log = std::make_shared<event_log>();
  auto data = std::make_shared<logged_reads>(16, log);
  auto o = small_options(4, 2);
  o = gpufeed::resolve_distributed(o);
  slot_layout const layout{data->spec(), o.batch_size};
  gpufeed::detail::epoch_source const epochs{data->size(), 0, o};
  gpufeed::detail::device_path device{
      std::make_unique<fake_stage>(layout, 1, 1, log, fake_stage::failures{})};
  gpufeed::detail::loader_metrics metrics{2, 0, 0};
  std::atomic<bool> const stop{false};
  gpufeed::detail::staged_reads none;
  gpufeed::detail::batch_filler filler{*data, layout, o, epochs, device, metrics, stop, none, 2};
  std::vector<std::unique_ptr<gpufeed::detail::slot>> slots;
  slots.push_back(gpufeed::detail::make_slot(0, device.host_memory(0), layout));
  gpufeed::detail::ring r{epochs, std::move(slots), 1, 1};

  // Worker 0 takes the batch, waits for the slot's previous copy before its first write, and
  // completes it (its copy queued).
  auto* s = r.start_next(2);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(filler.fill(*s, 0));
  EXPECT_EQ(log->all(),
            (std::vector<std::string>{"wait 0", "read 0", "read 1", "read 2", "read 3", "copy 0"}));
  // Worker 1 was attached too, but arrives after every sample is claimed: it must not wait for
  // the copy (that copy is its own batch's, and it has nothing to write).
  EXPECT_FALSE(filler.fill(*s, 1));
  EXPECT_EQ(log->count("wait"), 1U) << "a late worker waited for its own batch's copy";
  ASSERT_TRUE(r.complete(*s));
  r.hand_out(*s);
  r.release(*s);
  // The slot's next batch: its first claim holder waits (for the previous batch's copy), once.
  s = r.start_next(2);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(filler.fill(*s, 1));
  EXPECT_EQ(log->count("wait"), 2U);
  EXPECT_EQ(log->count("copy"), 2U);
  auto const events = log->all();
  EXPECT_EQ(events[6], "wait 0") << "the wait comes before the batch's first read";
  EXPECT_EQ(events[7], "read 4");
}

TEST(device_path_test, ABatchThatRaisesIsNeverCopied) {
  auto log = std::make_shared<event_log>();
  auto data = std::make_shared<failing_dataset>(12, std::set<std::size_t>{5});
  auto core = core_with(data, small_options(4, 1), log, {});
  ASSERT_TRUE(core->next().value.has_value());
  EXPECT_THROW((void)core->next(), gpufeed::sample_error);
  auto third = core->next();
  ASSERT_TRUE(third.value.has_value());
  EXPECT_EQ(third.value->sequence(), 2U);
  EXPECT_EQ(log->count("hand_off"), 2U) << "the failed batch reached no stream";
  // Batches 0 and 2 were copied; batch 1 was not (and epoch 1's may be by now).
  auto const copies = log->count("copy");
  EXPECT_GE(copies, 2U);
  auto const s = core->snapshot();
  EXPECT_EQ(s.failed_batches, 1U);
  EXPECT_EQ(s.batches, 2U);
}

// ------------------------------------------------------------------------------------------------
// Failures name the batch.

TEST(device_path_test, AFailedHandOffNamesTheBatchAndIsNotDelivered) {
  auto log = std::make_shared<event_log>();
  auto data = std::make_shared<echo_dataset>(24);
  auto core = core_with(data, small_options(4, 2), log, {.hand_off = 2});
  auto first = core->next();
  ASSERT_TRUE(first.value.has_value());
  try {
    (void)core->next();
    FAIL() << "the second hand-off fails";
  }
#if defined(GPUFEED_WITH_CUDA)
  catch (gpufeed::cuda_error const& e) {
    EXPECT_EQ(e.code(), cudaErrorLaunchFailure) << "the CUDA error code is kept";
#else
  catch (std::runtime_error const& e) {
#endif
    std::string const what = e.what();
    EXPECT_NE(what.find("batch 1 of epoch 0 (ring slot "), std::string::npos) << what;
    EXPECT_NE(what.find("hand-off"), std::string::npos) << what;
    EXPECT_NE(what.find("fake: the hand-off failed"), std::string::npos) << what;
  }
  auto s = core->snapshot();
  EXPECT_EQ(s.batches, 1U) << "a batch whose hand-off failed was counted as delivered";
  EXPECT_EQ(s.samples, 4U);
  EXPECT_EQ(s.failed_batches, 1U);
  EXPECT_EQ(s.ring_leased, 1U) << "the failed batch's slot was not given back";
  // The loader goes on with the following batch.
  auto third = core->next();
  ASSERT_TRUE(third.value.has_value());
  EXPECT_EQ(third.value->sequence(), 2U);
  auto const rows = third.value->host_field(0).as<std::int64_t>();
  EXPECT_EQ(std::vector<std::int64_t>(rows.begin(), rows.end()),
            (std::vector<std::int64_t>{8, 9, 10, 11}));
  EXPECT_EQ(core->snapshot().batches, 2U);
}

TEST(device_path_test, AnotherExceptionTypeNamesTheBatchAndKeepsTheOriginalNested) {
  auto log = std::make_shared<event_log>();
  auto data = std::make_shared<echo_dataset>(24);
  auto core = core_with(data, small_options(4, 2), log, {.hand_off = 1, .plain = true});
  try {
    (void)core->next();
    FAIL() << "the first hand-off fails";
  } catch (std::runtime_error const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("batch 0 of epoch 0 (ring slot "), std::string::npos) << what;
    EXPECT_NE(what.find("fake: the stage refused the stream"), std::string::npos) << what;
    try {
      std::rethrow_if_nested(e);
      ADD_FAILURE() << "the stage's own exception was not kept nested";
    } catch (std::invalid_argument const& original) {
      EXPECT_EQ(std::string{original.what()}, "fake: the stage refused the stream");
    }
  }
  EXPECT_EQ(core->snapshot().failed_batches, 1U);
}

TEST(device_path_test, AFailedCopyStopsTheLoaderNamingTheBatch) {
  auto log = std::make_shared<event_log>();
  auto data = std::make_shared<echo_dataset>(40);
  auto core = core_with(data, small_options(4, 1), log, {.copy = 3});
  std::vector<std::uint64_t> delivered;
  std::string error;
  for (int call = 0; call < 10 && error.empty(); ++call) {
    try {
      auto r = core->next();
      ASSERT_TRUE(r.value.has_value());
      delivered.push_back(r.value->sequence());
    } catch (std::exception const& e) {
      error = e.what();
    }
  }
  ASSERT_FALSE(error.empty()) << "next() never reported the failed copy";
  EXPECT_NE(error.find("batch 2 of epoch 0 (ring slot "), std::string::npos) << error;
  EXPECT_NE(error.find("copy to the device"), std::string::npos) << error;
  EXPECT_LE(delivered.size(), 2U) << "batch 2 was never copied";
  for (std::size_t k = 0; k < delivered.size(); ++k) EXPECT_EQ(delivered[k], k);
  // The failure stays: the loader cannot go on.
  try {
    (void)core->next();
    ADD_FAILURE() << "next() went on after a failed copy";
  } catch (std::exception const& e) {
    EXPECT_EQ(std::string{e.what()}, error);
  }
  EXPECT_EQ(core->snapshot().batches, delivered.size());
}

TEST(device_path_test, AFailedWaitForTheCopyNamesTheBatch) {
  auto log = std::make_shared<event_log>();
  auto data = std::make_shared<echo_dataset>(40);
  auto core = core_with(data, small_options(4, 1), log, {.wait = 1});
  try {
    (void)core->next();
    FAIL() << "the first wait fails";
  } catch (std::exception const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("batch 0 of epoch 0 (ring slot "), std::string::npos) << what;
    EXPECT_NE(what.find("waiting for the slot's previous copy"), std::string::npos) << what;
  }
}

TEST(device_path_test, EveryHandedOutSlotIsReleasedOnTheStage) {
  auto log = std::make_shared<event_log>();
  auto data = std::make_shared<echo_dataset>(24);
  auto core = core_with(data, small_options(4, 2), log, {});
  for (int i = 0; i < 6; ++i) {
    auto r = core->next();
    ASSERT_TRUE(r.value.has_value());
    if (i == 2) r.value->use_on(some_stream());
    EXPECT_EQ(r.value->field(0).device(), 0);
  }
  EXPECT_EQ(log->count("hand_off"), 6U);
  EXPECT_EQ(log->count("use_on"), 1U);
  EXPECT_EQ(log->count("release"), 6U);
}

}  // namespace
