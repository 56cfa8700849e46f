// The autotuner (loader_options::workers = auto_workers, prefetch_depth = auto_depth): its
// decision function over window measurements, and the loader under a synthetic cost model
// (reads that sleep a fixed time per sample, a consumer that sleeps per batch). Sleeping reads
// scale with the thread count even on a 2-core machine, so the model holds on a small CI box;
// its margins are wide (a worker count the model needs physically, not a tuned number).

#include "core/host_resources.hpp"
#include "core/tuning/autotuner.hpp"
#include "support/log_capture.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::loader_options;
using gpufeed::detail::autotune_action;
using gpufeed::detail::autotune_bounds;
using gpufeed::detail::autotune_window;
using gpufeed::detail::autotuner;
using gpufeed::test::log_capture;
using namespace std::chrono_literals;

autotune_window window(double stall, double busy, double slot_idle, unsigned workers,
                       std::size_t depth) {
  autotune_window w;
  w.wall_s = 1.0;
  w.consumer_wait_s = stall;
  w.read_s = busy * workers;
  w.slot_wait_s = slot_idle * workers;
  w.batches = 16;
  w.workers = workers;
  w.depth = depth;
  return w;
}

autotune_bounds both(unsigned max_workers, std::size_t max_depth) {
  return {true, true, max_workers, max_depth};
}

// ---- the decision function ---------------------------------------------------------------------

TEST(autotune_test, StalledWithBusyWorkersAddsWorkers) {
  autotuner tuner{both(8, 16)};
  auto const d = tuner.decide(window(0.3, 0.95, 0.0, 2, 2));
  EXPECT_EQ(d.action, autotune_action::add_workers);
  EXPECT_GT(d.workers, 2U);
  EXPECT_LE(d.workers, 4U);  // at most doubled in one step
  EXPECT_EQ(d.depth, 2U);
  EXPECT_NE(d.reason.find("busy"), std::string::npos) << d.reason;
}

TEST(autotune_test, WorkersNeverExceedTheirBound) {
  autotuner tuner{{true, false, 3, 4}};
  auto w = window(0.6, 0.99, 0.0, 2, 4);
  auto const d = tuner.decide(w);
  EXPECT_EQ(d.action, autotune_action::add_workers);
  EXPECT_EQ(d.workers, 3U);  // the step wanted more; the bound says 3
  w.workers = 3;
  EXPECT_EQ(tuner.decide(w).action, autotune_action::keep);  // depth is not tuned: nothing left
}

TEST(autotune_test, InputBoundAtTheWorkerBoundDoesNotDeepenTheRing) {
  // Reads are the bottleneck and no worker can be added: more depth would not help (it once
  // grew the ring to its maximum, one slot per window, in an input-bound sweep).
  autotuner tuner{both(2, 16)};
  auto const d = tuner.decide(window(0.6, 0.97, 0.0, 2, 2));
  EXPECT_EQ(d.action, autotune_action::keep);
  EXPECT_EQ(d.depth, 2U);
  EXPECT_EQ(d.workers, 2U);
}

TEST(autotune_test, StalledWithIdleWorkersAddsASlot) {
  autotuner tuner{both(8, 4)};
  auto const d = tuner.decide(window(0.15, 0.2, 0.7, 4, 2));
  EXPECT_EQ(d.action, autotune_action::add_slot);
  EXPECT_EQ(d.depth, 3U);
  EXPECT_EQ(d.workers, 4U);
  EXPECT_NE(d.reason.find("bursty"), std::string::npos) << d.reason;
}

TEST(autotune_test, DepthNeverExceedsItsBound) {
  autotuner depth_only{{false, true, 4, 4}};
  EXPECT_EQ(depth_only.decide(window(0.15, 0.2, 0.7, 4, 4)).action, autotune_action::keep);
  autotuner tuner{both(8, 4)};  // at the depth bound, a worker more is the only thing left
  auto const d = tuner.decide(window(0.15, 0.2, 0.7, 4, 4));
  EXPECT_EQ(d.action, autotune_action::add_workers);
  EXPECT_EQ(d.depth, 4U);
}

TEST(autotune_test, NoStallKeepsTheWorkersAndGivesOneBackAfterCalmWindows) {
  autotuner tuner{both(8, 16)};
  auto const calm = window(0.0, 0.1, 0.8, 4, 4);
  for (unsigned i = 1; i < tuner.calm_windows_needed(); ++i) {
    EXPECT_EQ(tuner.decide(calm).action, autotune_action::keep) << "window " << i;
  }
  auto const d = tuner.decide(calm);
  EXPECT_EQ(d.action, autotune_action::remove_worker);
  EXPECT_EQ(d.workers, 3U);
}

TEST(autotune_test, NeverGoesBelowOneWorker) {
  autotuner tuner{both(8, 16)};
  for (int i = 0; i < 100; ++i) {
    auto const d = tuner.decide(window(0.0, 0.0, 0.0, 1, 2));
    EXPECT_EQ(d.action, autotune_action::keep);
    EXPECT_EQ(d.workers, 1U);
  }
}

TEST(autotune_test, BusyWorkersAreNotGivenBack) {
  autotuner tuner{both(8, 16)};
  for (int i = 0; i < 20; ++i) {  // 4 workers 60 % busy: 3 would be 80 % busy
    EXPECT_EQ(tuner.decide(window(0.0, 0.6, 0.1, 4, 4)).action, autotune_action::keep);
  }
}

TEST(autotune_test, AStallAfterGivingBackBacksOff) {
  autotuner tuner{both(8, 16)};
  auto const first = tuner.calm_windows_needed();
  autotune_action last = autotune_action::keep;
  for (unsigned i = 0; i < first; ++i) last = tuner.decide(window(0.0, 0.1, 0.8, 4, 4)).action;
  ASSERT_EQ(last, autotune_action::remove_worker);
  auto const d = tuner.decide(window(0.2, 0.9, 0.0, 3, 4));
  EXPECT_EQ(d.action, autotune_action::add_workers);
  EXPECT_EQ(tuner.calm_windows_needed(), 2 * first);  // hysteresis: no quick oscillation
  // The same calm windows as before no longer give a worker back.
  for (unsigned i = 0; i < first; ++i) {
    EXPECT_EQ(tuner.decide(window(0.0, 0.1, 0.8, 4, 4)).action, autotune_action::keep);
  }
}

TEST(autotune_test, ManualBoundsNeverChange) {
  autotuner tuner{{false, false, 4, 4}};
  EXPECT_EQ(tuner.decide(window(0.5, 0.99, 0.0, 4, 4)).action, autotune_action::keep);
  EXPECT_EQ(tuner.decide(window(0.5, 0.1, 0.8, 4, 4)).action, autotune_action::keep);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(tuner.decide(window(0.0, 0.0, 0.0, 4, 4)).action, autotune_action::keep);
  }
}

TEST(autotune_test, PlanRespectsTheBudgetAndTheCaps) {
  loader_options o;
  o.workers = gpufeed::auto_workers;
  o.prefetch_depth = gpufeed::auto_depth;
  o.autotune.max_workers = 5;
  o.autotune.memory_budget = 3 * 1000 + 999;
  auto const plan = gpufeed::detail::plan_autotune(o, 1000);
  auto const cpus = gpufeed::detail::usable_cpus();
  EXPECT_EQ(plan.threads, 5U);
  // It starts at half the cores, at least 2, within the cap.
  EXPECT_EQ(plan.start_workers, std::min(5U, std::max(2U, cpus / 2)));
  EXPECT_EQ(plan.slots, 3U);
  EXPECT_EQ(plan.start_depth, 2U);

  o.autotune.max_workers = 0;  // the cores, at most 64
  auto const cores = gpufeed::detail::plan_autotune(o, 1000);
  EXPECT_EQ(cores.threads, std::min(cpus, 64U));

  loader_options manual;
  manual.workers = 3;
  manual.prefetch_depth = 7;
  auto const same = gpufeed::detail::plan_autotune(manual, 1000);
  EXPECT_EQ(same.threads, 3U);
  EXPECT_EQ(same.start_workers, 3U);
  EXPECT_EQ(same.slots, 7U);
  EXPECT_EQ(same.start_depth, 7U);
}

TEST(autotune_test, OptionsAcceptAutoAndRefuseBadBounds) {
  loader_options o;
  o.workers = gpufeed::auto_workers;
  o.prefetch_depth = gpufeed::auto_depth;
  EXPECT_NO_THROW(gpufeed::validate(o));
  o.autotune.max_depth = 0;
  EXPECT_THROW(gpufeed::validate(o), gpufeed::logic_error);
  o.autotune.max_depth = 16;
  o.autotune.window_batches = 1;
  EXPECT_THROW(gpufeed::validate(o), gpufeed::logic_error);
  o.autotune.window_batches = 16;
  o.autotune.memory_budget = 0;
  EXPECT_THROW(gpufeed::validate(o), gpufeed::logic_error);
}

// ---- the loader under a cost model -------------------------------------------------------------

// The consumer: takes `batches` batches, each held for step(batch number) before release.
// Returns the stall fraction over the last `tail` batches (time blocked in next() / wall).
template <class Step>
double consume(gpufeed::loader& source, std::size_t batches, std::size_t tail, Step step,
               std::function<void(gpufeed::stats const&)> const& check = {}) {
  using clock = std::chrono::steady_clock;
  clock::duration waited{};
  clock::time_point tail_from{};
  for (std::size_t i = 0; i < batches; ++i) {
    if (i + tail == batches) {
      tail_from = clock::now();
      waited = {};
    }
    auto const t0 = clock::now();
    auto b = source.next();
    if (!b) {
      b = source.next();  // the epoch ended
    }
    waited += clock::now() - t0;
    EXPECT_TRUE(b.has_value());
    auto const d = step(i);
    if (d.count() > 0) std::this_thread::sleep_for(d);
    if (check) check(source.snapshot());
  }
  auto const wall = std::chrono::duration<double>(clock::now() - tail_from).count();
  return wall > 0 ? std::chrono::duration<double>(waited).count() / wall : 0.0;
}

// The autotuner starts from half the usable CPUs (at least 2): these cases run as on a 2-core
// and on a 16-core machine (usable_cpus faked), and each sets what the tuner must reach from
// where it starts, never from an assumed core count.
class autotune_on_machines : public ::testing::TestWithParam<unsigned> {
 protected:
  gpufeed::detail::scoped_usable_cpus const cores_{GetParam()};
};

INSTANTIATE_TEST_SUITE_P(cores, autotune_on_machines, ::testing::Values(2U, 16U),
                         [](auto const& machine) {
                           return std::to_string(machine.param) + "_cores";
                         });

TEST_P(autotune_on_machines, RaisesWorkersUntilTheConsumerIsFed) {
  log_capture const logs{"info"};
  // The tuner starts with `start` workers (half the cores, at least 2, at most the cap). A
  // batch of 4 samples needs (start + 2) x the 2 ms step of reading: `start` workers leave the
  // consumer waiting, start + 2 or more feed it.
  unsigned const cap = 12;
  unsigned const start = std::min(cap, std::max(2U, GetParam() / 2));
  auto const per_sample = std::chrono::microseconds{500 * (start + 2)};
  auto data = std::make_shared<gpufeed::test::sleepy_dataset>(
      100'000, [per_sample](std::size_t) { return per_sample; });
  double tail_stall = 1;
  {
    loader_options o;
    o.batch_size = 4;
    o.workers = gpufeed::auto_workers;
    o.prefetch_depth = gpufeed::auto_depth;
    o.autotune.max_workers = cap;
    gpufeed::loader source{data, o};
    auto const at_start = source.snapshot();
    EXPECT_TRUE(at_start.autotuned);
    EXPECT_EQ(at_start.worker_threads, cap);
    ASSERT_EQ(at_start.workers, start);
    tail_stall = consume(
        source, 360, 100, [](std::size_t) { return 2ms; },
        [cap](gpufeed::stats const& s) {
          EXPECT_LE(s.workers, cap);
          EXPECT_LE(s.ring_slots, s.ring_capacity);
        });
    auto const end = source.snapshot();
    EXPECT_GE(end.workers, start + 2) << end.to_string();
    EXPECT_GT(end.autotune_changes, 0U);
    EXPECT_GT(end.autotune_last_change_batch, 0U);
  }
  EXPECT_LT(tail_stall, 0.3);  // `start` workers stall a third of the time or more
  EXPECT_GE(logs.count("autotune at batch"), 1U);
  EXPECT_GE(logs.count("workers " + std::to_string(start) + " -> "), 1U);
  EXPECT_GE(logs.count("were busy"), 1U);
}

TEST(autotune_test, FastReaderAndSlowConsumerDoNotGrowWorkers) {
  log_capture const logs{"info"};
  auto data = std::make_shared<gpufeed::test::echo_dataset>(100'000);
  loader_options o;
  o.batch_size = 4;
  o.workers = gpufeed::auto_workers;
  o.prefetch_depth = gpufeed::auto_depth;
  o.autotune.max_workers = 8;
  std::optional<gpufeed::loader> source{std::in_place, data, o};
  auto const start = source->snapshot().workers;
  consume(
      *source, 200, 50, [](std::size_t) { return 1ms; },
      [&](gpufeed::stats const& s) { EXPECT_LE(s.workers, start); });
  EXPECT_LE(source->snapshot().workers, start);
  source.reset();
  EXPECT_EQ(logs.count("were busy"), 0U);
}

TEST(autotune_test, AutoDepthGrowsOnABurstyConsumerWithIdleWorkers) {
  log_capture const logs{"info"};
  // 4 workers read a batch in about 1 ms; the consumer takes 8 batches at once, then steps
  // for 40 ms: the workers idle most of the time, yet a 2-slot ring makes each burst wait.
  auto data = std::make_shared<gpufeed::test::sleepy_dataset>(
      100'000, [](std::size_t) { return std::chrono::microseconds{1000}; });
  gpufeed::stats end;
  {
    loader_options o;
    o.batch_size = 4;
    o.workers = 4;
    o.prefetch_depth = gpufeed::auto_depth;
    gpufeed::loader source{data, o};
    EXPECT_EQ(source.snapshot().ring_slots, 2U);
    consume(
        source, 240, 8, [](std::size_t i) { return i % 8 == 7 ? 40ms : 0ms; },
        [](gpufeed::stats const& s) {
          EXPECT_EQ(s.workers, 4U);  // manual: never changed
          EXPECT_LE(s.ring_slots, s.ring_capacity);
        });
    end = source.snapshot();
  }
  EXPECT_GT(end.ring_slots, 2U) << end.to_string();
  EXPECT_EQ(end.worker_threads, 4U);
  EXPECT_GE(logs.count("prefetch_depth 2 -> 3"), 1U);
  EXPECT_GE(logs.count("bursty"), 1U);
}

TEST_P(autotune_on_machines, NeverExceedsTheThreadCapOrTheMemoryBudget) {
  auto data = std::make_shared<gpufeed::test::sleepy_dataset>(
      100'000, [](std::size_t) { return std::chrono::microseconds{3000}; }, 4096);
  std::size_t slot_bytes = 0;
  {
    gpufeed::loader probe{data, {.batch_size = 4, .workers = 1, .prefetch_depth = 1}};
    slot_bytes = probe.snapshot().slot_bytes;
  }
  ASSERT_GT(slot_bytes, 0U);
  // The cap is one worker above where the tuner starts, so that it has to push against it.
  unsigned const cap = std::max(2U, GetParam() / 2) + 1;
  loader_options o;
  o.batch_size = 4;
  o.workers = gpufeed::auto_workers;
  o.prefetch_depth = gpufeed::auto_depth;
  o.autotune.max_workers = cap;
  o.autotune.memory_budget = 3 * slot_bytes + slot_bytes / 2;
  gpufeed::loader source{data, o};
  // Fixed at construction: `cap` threads, and the 3 slots the budget holds.
  auto const start = source.snapshot();
  EXPECT_EQ(start.worker_threads, cap);
  EXPECT_EQ(start.ring_capacity, 3U);
  EXPECT_LE(start.host_bytes + start.bookkeeping_bytes, *o.autotune.memory_budget);
  ASSERT_EQ(start.workers, cap - 1);
  // Reads far slower than the consumer, in bursts: the tuner adds workers up to the cap, and
  // what it moves stays within the bounds after every batch.
  unsigned most_workers = start.workers;
  auto const check = [&](gpufeed::stats const& s) {
    most_workers = std::max(most_workers, s.workers);
    EXPECT_LE(s.workers, cap);
    EXPECT_LE(s.ring_slots, 3U);
    EXPECT_LE(s.host_bytes + s.bookkeeping_bytes, *o.autotune.memory_budget);
  };
  consume(
      source, 120, 10, [](std::size_t i) { return i % 10 == 9 ? 20ms : 0ms; }, check);
  EXPECT_EQ(most_workers, cap) << "the tuner never reached the cap: "
                               << source.snapshot().to_string();
}

TEST(autotune_test, TheMemoryBudgetCountsEachSlotsPerSampleLists) {
  // One-byte samples: a slot's batch is 256 bytes (128 samples, padded), its per-sample lists
  // 128 x 32 bytes. A budget of three slots' whole footprint gives three slots; counting the
  // batch alone (as it once did) gave the 16 of max_depth, over twelve times the budget.
  // in_memory reads the vector in place: it must outlive the loader.
  std::vector<std::uint8_t> const bytes(4096);
  auto data = std::make_shared<gpufeed::in_memory>(4096);
  data->add<std::uint8_t>("x", {1}, bytes);
  loader_options o;
  o.batch_size = 128;
  o.workers = 1;
  o.prefetch_depth = gpufeed::auto_depth;
  std::size_t const per_slot = 256 + 128 * 32;
  o.autotune.memory_budget = 3 * per_slot;
  gpufeed::loader source{data, o};
  auto const s = source.snapshot();
  EXPECT_EQ(s.slot_bytes, 256U);
  EXPECT_EQ(s.bookkeeping_bytes, s.ring_capacity * 128 * 32);
  EXPECT_EQ(s.ring_capacity, 3U);
  EXPECT_LE(s.host_bytes + s.bookkeeping_bytes, *o.autotune.memory_budget);
}

TEST(autotune_test, ManualSettingsAreUntouched) {
  log_capture const logs{"info"};
  auto data = std::make_shared<gpufeed::test::sleepy_dataset>(
      100'000, [](std::size_t) { return std::chrono::microseconds{2000}; });
  gpufeed::stats end;
  {
    gpufeed::loader source{data, {.batch_size = 4, .workers = 2, .prefetch_depth = 3}};
    consume(source, 80, 10, [](std::size_t) { return 0ms; });  // a starved consumer
    end = source.snapshot();
  }
  EXPECT_FALSE(end.autotuned);
  EXPECT_EQ(end.workers, 2U);
  EXPECT_EQ(end.worker_threads, 2U);
  EXPECT_EQ(end.ring_slots, 3U);
  EXPECT_EQ(end.ring_capacity, 3U);
  EXPECT_EQ(end.autotune_changes, 0U);
  EXPECT_EQ(logs.count("autotun"), 0U);
}

TEST(autotune_test, AConsumerHoldingEverySlotMakesAnAutoRingDeeper) {
  log_capture const logs{"info"};
  auto data = std::make_shared<gpufeed::test::echo_dataset>(1000);
  loader_options o;
  o.batch_size = 4;
  o.workers = 2;
  o.prefetch_depth = gpufeed::auto_depth;
  o.autotune.max_depth = 6;
  gpufeed::loader source{data, o};
  std::vector<gpufeed::batch> held;
  for (int i = 0; i < 5; ++i) {  // a manual depth of 2 would throw at the third
    auto b = source.next();
    ASSERT_TRUE(b.has_value());
    held.push_back(std::move(*b));
  }
  auto const grown = source.snapshot();
  EXPECT_GE(grown.ring_slots, 5U);
  EXPECT_EQ(grown.autotune_changes, grown.ring_slots - 2);  // one change per slot added
  // Logged like the tuner's own changes: the third next() found both slots held.
  EXPECT_EQ(logs.count("autotune at batch 2: prefetch_depth 2 -> 3: the consumer holds 2 "
                       "batches at once, every slot in use"),
            1U);
  held.clear();
  EXPECT_TRUE(source.next().has_value());
}

}  // namespace
