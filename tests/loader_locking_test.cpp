// The loader's wake-ups and its mutex: no lost wake-up around the workers' idle poll window, and
// no log call while the loader's mutex is held.

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::loader;
using namespace gpufeed::test;  // NOLINT(google-build-using-namespace): test doubles

}  // namespace

// Idle workers poll briefly before they park, and release() wakes a parked worker only when no
// worker is polling. A consumer whose pace straddles the polling window (releases that come at
// once, just inside, just outside, and long after it) exercises every hand-over between the two;
// a lost wake-up would leave a free slot unfilled and surface here as a timeout_error.
TEST(loader_lifetime_test, NoLostWakeUpsAroundTheIdlePollWindow) {
  using namespace std::chrono_literals;
  constexpr std::chrono::microseconds paces[] = {0us, 20us, 45us, 55us, 120us, 400us};
  for (unsigned workers : {1U, 2U, 3U}) {
    auto data = std::make_shared<echo_dataset>(97);
    auto o = small_options(5, workers);
    o.prefetch_depth = 2;
    o.timeout = 20s;
    loader l{data, o};
    std::size_t expected_sequence = 0;
    std::size_t delivered = 0;
    for (std::size_t i = 0; i < 240; ++i) {
      auto b = l.next();
      if (!b) {
        expected_sequence = 0;
        continue;
      }
      ASSERT_EQ(b->sequence(), expected_sequence) << "workers " << workers << ", batch " << i;
      ++expected_sequence;
      delivered += b->size();
      b->release();
      std::this_thread::sleep_for(paces[i % std::size(paces)]);
    }
    // 240 calls over epochs of 20 batches (19 of 5 samples and one of 2) and their ends: 11
    // whole epochs (231 calls, 1067 samples), then 9 batches more.
    EXPECT_EQ(delivered, 11U * 97U + 9U * 5U) << "workers " << workers;
  }
}

// ------------------------------------------------------------------------------------------------
// No log call while the loader's mutex is held: a log line can take milliseconds (a slow sink, a
// full pipe), and workers, the consumer and snapshot() would all wait for it.

namespace {

// On each message from gpufeed, checks from another thread that the loader's mutex is free: the
// probe takes a snapshot (which needs that mutex) and the sink waits for it. A message logged
// with the mutex held stops the probe until the sink returns, so it never finishes in time, and
// the message is kept as evidence.
class mutex_probe_sink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void watch(gpufeed::loader const* l) { target_.store(l); }
  // Joins the probes still running: call once the loader's calls have returned.
  void join_probes() {
    std::lock_guard const lock{mutex_};
    for (auto& t : probes_) t.join();
    probes_.clear();
  }
  std::vector<std::string> under_lock() {
    std::lock_guard const lock{mutex_};
    return under_lock_;
  }
  std::vector<std::string> probed() {
    std::lock_guard const lock{mutex_};
    return probed_;
  }

 protected:
  void sink_it_(spdlog::details::log_msg const& message) override {
    auto const* l = target_.load();
    if (l == nullptr || !under_lock_.empty()) return;  // one piece of evidence is enough
    std::string text{message.payload.data(), message.payload.size()};
    auto done = std::make_shared<std::promise<void>>();
    auto finished = done->get_future();
    probes_.emplace_back([l, done] {
      (void)l->snapshot();
      done->set_value();
    });
    if (finished.wait_for(std::chrono::seconds{20}) != std::future_status::ready) {
      under_lock_.push_back(text);
    }
    probed_.push_back(std::move(text));
  }
  void flush_() override {}

 private:
  std::atomic<gpufeed::loader const*> target_{nullptr};
  std::vector<std::thread> probes_;
  std::vector<std::string> probed_;
  std::vector<std::string> under_lock_;
};

// Attaches a probe sink to gpufeed's logger for its lifetime (at info level).
class probed_log {
 public:
  probed_log() : sink_{std::make_shared<mutex_probe_sink>()} {
    gpufeed::set_log_level("info");
    gpufeed::logger()->sinks().push_back(sink_);
  }
  ~probed_log() {
    sink_->join_probes();
    auto& sinks = gpufeed::logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  probed_log(probed_log const&) = delete;
  probed_log& operator=(probed_log const&) = delete;
  mutex_probe_sink& sink() { return *sink_; }

 private:
  std::shared_ptr<mutex_probe_sink> sink_;
};

std::size_t containing(std::vector<std::string> const& lines, std::string const& text) {
  return static_cast<std::size_t>(std::count_if(lines.begin(), lines.end(), [&](auto const& l) {
    return l.find(text) != std::string::npos;
  }));
}

}  // namespace

TEST(loader_lifetime_test, NoLogCallWhileTheLoaderMutexIsHeld) {
  using namespace std::chrono_literals;
  probed_log log;
  {  // skipped samples (once logged with the mutex held)
    auto data = std::make_shared<failing_dataset>(40, std::set<std::size_t>{2, 9, 30});
    auto o = small_options(4, 2);
    o.on_error = gpufeed::error_policy::skip;
    loader l{data, o};
    log.sink().watch(&l);
    (void)drain_epoch(l);
    log.sink().watch(nullptr);
    log.sink().join_probes();
  }
  {  // a stall warning, then held batches growing the ring
    auto g = std::make_shared<gate>();
    auto data = std::make_shared<gated_dataset>(64, g, std::set<std::size_t>{1}, false);
    auto o = small_options(4, 2);
    o.prefetch_depth = 2;
    o.stall_warning = 10ms;
    loader l{data, o};
    log.sink().watch(&l);
    std::thread opener{[&] {
      (void)eventually([&] { return containing(log.sink().probed(), "has waited") > 0; });
      g->open();
    }};
    std::vector<gpufeed::batch> held;
    for (int i = 0; i < 5; ++i) {
      auto b = l.next();
      ASSERT_TRUE(b.has_value());
      held.push_back(std::move(*b));
    }
    opener.join();
    log.sink().watch(nullptr);
    log.sink().join_probes();
  }
  {  // an automatic depth deepened by a consumer that holds every slot
    auto data = std::make_shared<echo_dataset>(100);
    auto o = small_options(4, 2);
    o.prefetch_depth = gpufeed::auto_depth;
    loader l{data, o};
    log.sink().watch(&l);
    std::vector<gpufeed::batch> held;
    for (int i = 0; i < 4; ++i) {
      auto b = l.next();
      ASSERT_TRUE(b.has_value());
      held.push_back(std::move(*b));
    }
    log.sink().watch(nullptr);
    log.sink().join_probes();
  }
  auto const probed = log.sink().probed();
  EXPECT_EQ(containing(probed, "skipped sample"), 3U);
  EXPECT_GE(containing(probed, "has waited"), 1U);
  EXPECT_EQ(containing(probed, "ring slots are leased"), 1U);
  EXPECT_GE(containing(probed, "autotune at batch"), 1U);
  EXPECT_EQ(log.sink().under_lock(), std::vector<std::string>{})
      << "logged while the loader's mutex was held";
}
