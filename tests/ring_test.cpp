// The ring on its own, without threads: every transition of a slot, the cursors, flushes,
// growth, and the rules of ring.hpp checked after each step (and shown to catch a broken one).

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/epochs/epoch_source.hpp"
#include "core/ring/ring.hpp"
#include "core/ring/ring_memory.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::detail::cursor;
using gpufeed::detail::epoch_source;
using gpufeed::detail::ring;
using gpufeed::detail::slot;
using state = gpufeed::detail::slot::state;

// A ring of `slots` slots over `n` samples cut into batches of `batch_size`, `depth` in use.
class ring_fixture {
 public:
  ring_fixture(std::size_t n, std::size_t batch_size, std::size_t slots, std::size_t depth,
               std::size_t max_slots, gpufeed::sample_order order = gpufeed::sample_order::builtin)
      : options_{options(batch_size, order)},
        layout_{gpufeed::sample_spec{}.add("x", gpufeed::dtype::u8, {2}), batch_size},
        epochs_{n, 0, options_},
        ring_{epochs_, make_slots(slots), max_slots, depth} {}

  ring& r() { return ring_; }
  epoch_source& epochs() { return epochs_; }
  std::unique_ptr<slot> new_slot(std::size_t id) const {
    return gpufeed::detail::make_slot(id, nullptr, layout_);
  }

 private:
  static gpufeed::loader_options options(std::size_t batch_size, gpufeed::sample_order order) {
    auto o = gpufeed::test::small_options(batch_size, 1);
    o.order = order;
    return o;
  }
  std::vector<std::unique_ptr<slot>> make_slots(std::size_t count) const {
    std::vector<std::unique_ptr<slot>> out;
    for (std::size_t i = 0; i < count; ++i) out.push_back(new_slot(i));
    return out;
  }

  gpufeed::loader_options options_;
  gpufeed::detail::slot_layout layout_;
  epoch_source epochs_;
  ring ring_;
};

// The rules hold; on failure, says which one broke after which step.
::testing::AssertionResult holds(ring const& r, std::string const& after) {
  auto const broken = r.violation();
  if (broken.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "after " << after << ": " << broken;
}

// A worker's whole part in one batch: every sample claimed and read (no dataset here).
void read_all(slot& s) {
  s.claims.next.store(s.count);
  s.claims.remaining.store(0);
}

TEST(ring_test, StartsBatchesInPlanOrderOnlyWithinTheDepth) {
  ring_fixture f{10, 4, 3, 2, 3};  // batches of 4, 4, 2
  auto& r = f.r();
  ASSERT_TRUE(holds(r, "construction"));
  auto* a = r.start_next(1);
  auto* b = r.start_next(1);
  ASSERT_TRUE(a != nullptr && b != nullptr);
  EXPECT_EQ(a->at, (cursor{0, 0}));
  EXPECT_EQ(b->at, (cursor{0, 1}));
  EXPECT_EQ(a->count, 4U);
  EXPECT_EQ(b->first_position, 4U);
  EXPECT_EQ(r.start_next(1), nullptr) << "slot 2 is beyond the depth of 2";
  EXPECT_TRUE(r.depth_full());
  EXPECT_EQ(r.at(2).status, state::free);
  EXPECT_EQ(r.count(state::filling), 2U);
  EXPECT_EQ(r.producer(), (cursor{0, 2}));
  EXPECT_TRUE(holds(r, "two starts"));
  r.deepen(3);
  auto* c = r.start_next(1);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->id, 2U);
  EXPECT_EQ(c->count, 2U) << "the short last batch";
  EXPECT_EQ(r.producer(), (cursor{1, 0})) << "past the epoch's last batch: the next epoch";
  EXPECT_TRUE(holds(r, "deepen and a third start"));
}

TEST(ring_test, ABatchGoesFromFreeToLeasedAndBack) {
  ring_fixture f{8, 4, 2, 2, 2};
  auto& r = f.r();
  auto* s = r.start_next(2);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->grain, 1U) << "4 samples over 4 x 2 workers";
  EXPECT_EQ(r.consumer_slot(), s);
  r.attach(*s);
  read_all(*s);
  EXPECT_EQ(r.unclaimed(), nullptr) << "every sample is claimed";
  ASSERT_TRUE(r.complete(*s));
  EXPECT_EQ(s->status, state::ready);
  EXPECT_FALSE(r.detach(*s)) << "a ready slot is not free";
  ASSERT_TRUE(holds(r, "complete"));
  r.hand_out(*s);
  EXPECT_EQ(s->status, state::leased);
  EXPECT_EQ(r.consumer(), (cursor{0, 1}));
  EXPECT_EQ(r.occupancy().leased, 1U);
  ASSERT_TRUE(holds(r, "hand_out"));
  r.release(*s);
  EXPECT_EQ(s->status, state::free);
  EXPECT_EQ(r.count(state::free), 2U);
  ASSERT_TRUE(holds(r, "release"));
  // The consumer's next batch, then the end of the epoch.
  auto* t = r.start_next(2);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->at, (cursor{0, 1}));
  EXPECT_FALSE(r.step_past_epoch_end());
  read_all(*t);
  ASSERT_TRUE(r.complete(*t));
  r.discard(*t);  // as next() does with a batch that raised
  EXPECT_EQ(t->status, state::free);
  EXPECT_EQ(r.consumer(), (cursor{0, 2}));
  EXPECT_TRUE(r.step_past_epoch_end());
  EXPECT_EQ(r.consumer(), (cursor{1, 0}));
  EXPECT_TRUE(holds(r, "end of epoch"));
}

TEST(ring_test, UnclaimedIsTheEarliestBatchWithSamplesLeft) {
  ring_fixture f{40, 4, 3, 3, 3};
  auto& r = f.r();
  auto* a = r.start_next(1);
  auto* b = r.start_next(1);
  auto* c = r.start_next(1);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(r.unclaimed(), a);
  read_all(*a);
  EXPECT_EQ(r.unclaimed(), b);
  b->claims.next.store(b->count + 3);  // overshoot: late workers claim past the end
  EXPECT_EQ(r.unclaimed(), c);
}

TEST(ring_test, FlushDiscardsWhatIsPreparedAndKeepsLeases) {
  ring_fixture f{40, 4, 4, 4, 4};
  auto& r = f.r();
  auto* leased = r.start_next(1);
  read_all(*leased);
  ASSERT_TRUE(r.complete(*leased));
  r.hand_out(*leased);
  auto* ready = r.start_next(1);
  read_all(*ready);
  ASSERT_TRUE(r.complete(*ready));
  auto* filling = r.start_next(1);
  r.attach(*filling);  // a worker is still reading it
  auto const generation = r.generation();
  r.flush({3, 2});
  ASSERT_TRUE(holds(r, "flush"));
  EXPECT_EQ(r.generation(), generation + 1);
  EXPECT_EQ(leased->status, state::leased) << "a lease survives a flush";
  EXPECT_EQ(ready->status, state::free);
  EXPECT_TRUE(ready->claims.cancelled.load());
  EXPECT_EQ(filling->status, state::free);
  EXPECT_TRUE(filling->claims.cancelled.load());
  EXPECT_EQ(r.consumer(), (cursor{3, 2}));
  EXPECT_EQ(r.producer(), (cursor{3, 2}));
  // The worker still on the discarded batch finds it gone when it completes.
  EXPECT_FALSE(r.complete(*filling));
  // Its slot is not started again until that worker leaves.
  std::vector<slot*> started;
  while (auto* s = r.start_next(1)) started.push_back(s);
  ASSERT_EQ(started.size(), 2U);
  EXPECT_EQ(started[0]->at, (cursor{3, 2}));
  EXPECT_EQ(started[1]->at, (cursor{3, 3}));
  for (auto* s : started) EXPECT_NE(s, filling);
  EXPECT_TRUE(r.detach(*filling)) << "the last worker leaving a free slot makes it usable";
  auto* again = r.start_next(1);
  EXPECT_EQ(again, filling);
  EXPECT_FALSE(again->claims.cancelled.load());
  EXPECT_TRUE(holds(r, "restart after the flush"));
}

TEST(ring_test, EnterEpochKeepsWhatThePreparedEpochHas) {
  ring_fixture f{8, 4, 3, 3, 3};  // two batches per epoch
  auto& r = f.r();
  for (int i = 0; i < 2; ++i) {
    auto* s = r.start_next(1);
    read_all(*s);
    ASSERT_TRUE(r.complete(*s));
    r.hand_out(*s);
    r.release(*s);
  }
  auto* next_epoch = r.start_next(1);  // the producer runs ahead into epoch 1
  ASSERT_NE(next_epoch, nullptr);
  EXPECT_EQ(next_epoch->at, (cursor{1, 0}));
  EXPECT_TRUE(r.at_start_of(1)) << "just past epoch 0's last batch";
  EXPECT_FALSE(r.enter_epoch(1, r.at_start_of(1))) << "kept, not flushed";
  EXPECT_EQ(next_epoch->status, state::filling);
  EXPECT_EQ(r.consumer_slot(), next_epoch);
  EXPECT_FALSE(r.at_start_of(5));
  EXPECT_TRUE(r.enter_epoch(5, r.at_start_of(5)));
  EXPECT_EQ(next_epoch->status, state::free);
  EXPECT_EQ(r.consumer(), (cursor{5, 0}));
  EXPECT_TRUE(holds(r, "enter_epoch"));
}

TEST(ring_test, AGivenEpochStartsNothingUntilItsOrderIsGiven) {
  ring_fixture f{100, 4, 2, 2, 2, gpufeed::sample_order::given};
  auto& r = f.r();
  EXPECT_EQ(r.start_next(1), nullptr) << "no order for epoch 0 yet";
  f.epochs().give(f.epochs().make_order(0, {.indices = {7, 3, 9, 1, 2}}));
  auto* s = r.start_next(1);
  ASSERT_NE(s, nullptr);
  ASSERT_NE(s->order, nullptr);
  EXPECT_EQ(f.epochs().index(s->order.get(), 0, 1), 3U);
  auto* t = r.start_next(1);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->count, 1U);
  EXPECT_EQ(r.producer(), (cursor{1, 0}));
  EXPECT_TRUE(holds(r, "a given order"));
}

TEST(ring_test, HeldBatchesGrowTheRingUpToItsLimit) {
  ring_fixture f{100, 4, 2, 2, 3};
  auto& r = f.r();
  std::vector<slot*> held;
  for (int i = 0; i < 2; ++i) {
    auto* s = r.start_next(1);
    read_all(*s);
    ASSERT_TRUE(r.complete(*s));
    r.hand_out(*s);
    held.push_back(s);
  }
  EXPECT_TRUE(r.all_leased());
  EXPECT_EQ(r.start_next(1), nullptr);
  ASSERT_TRUE(r.may_grow());
  r.grow(f.new_slot(2));
  EXPECT_EQ(r.size(), 3U);
  EXPECT_EQ(r.depth(), 3U);
  EXPECT_EQ(r.grown(), 1U);
  EXPECT_FALSE(r.all_leased());
  ASSERT_TRUE(holds(r, "grow"));
  auto* third = r.start_next(1);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(third->id, 2U);
  EXPECT_FALSE(r.may_grow()) << "at max_slots";
  EXPECT_THROW(r.grow(f.new_slot(3)), gpufeed::logic_error);
  EXPECT_TRUE(holds(r, "a refused growth"));
}

TEST(ring_test, AnAutomaticDepthMayNotGrowTheRingBeforeUsingEverySlot) {
  ring_fixture f{100, 4, 3, 1, 8};
  auto& r = f.r();
  EXPECT_FALSE(r.may_grow()) << "two allocated slots are not in use yet";
  r.deepen(2);
  r.deepen(1);  // the depth never shrinks
  EXPECT_EQ(r.depth(), 2U);
  r.deepen(10);  // nor goes past the slots there are
  EXPECT_EQ(r.depth(), 3U);
  EXPECT_TRUE(r.may_grow());
}

TEST(ring_test, ViolationNamesEachBrokenRule) {
  {
    ring_fixture f{40, 4, 3, 2, 3};
    f.r().at(2).status = state::filling;  // beyond the depth, and not counted
    auto const broken = f.r().violation();
    EXPECT_NE(broken.find("rule 1"), std::string::npos) << broken;
  }
  {
    ring_fixture f{40, 4, 3, 2, 3};
    auto* s = f.r().start_next(1);
    f.r().flush({0, 0});
    s->status = state::ready;  // counted wrong on purpose: rule 1 first
    EXPECT_NE(f.r().violation().find("rule 1"), std::string::npos);
  }
  {
    ring_fixture f{40, 4, 3, 3, 3};
    auto* a = f.r().start_next(1);
    auto* b = f.r().start_next(1);
    b->at = a->at;
    auto const broken = f.r().violation();
    EXPECT_NE(broken.find("rule 4: two slots hold batch"), std::string::npos) << broken;
  }
  {
    ring_fixture f{40, 4, 3, 3, 3};
    auto* a = f.r().start_next(1);
    a->generation = 7;
    auto const broken = f.r().violation();
    EXPECT_NE(broken.find("rule 4"), std::string::npos) << broken;
    EXPECT_NE(broken.find("generation 7"), std::string::npos) << broken;
  }
  {
    ring_fixture f{40, 4, 3, 3, 3};
    auto* a = f.r().start_next(1);
    a->at = {0, 9};  // not started yet by the producer
    auto const broken = f.r().violation();
    EXPECT_NE(broken.find("outside [consumer"), std::string::npos) << broken;
  }
}

// Random transitions, each one the loader could make, with the rules checked after every one;
// the consumer must see every batch of every epoch once, in plan order.
TEST(ring_test, RandomTransitionsKeepEveryRule) {
  std::size_t const n = 37;  // batches of 4: 9 full and a short one
  ring_fixture f{n, 4, 3, 2, 6};
  auto& r = f.r();
  std::mt19937 random{20261124};
  std::vector<slot*> held;
  std::vector<cursor> delivered;
  std::size_t steps = 0;
  for (; steps < gpufeed::test::scaled(20'000, 4'000) && delivered.size() < 300; ++steps) {
    auto const op = random() % 6;
    if (op == 0) {  // a worker starts or joins a batch
      slot* s = r.unclaimed();
      if (s == nullptr) s = r.start_next(2);
      if (s != nullptr) r.attach(*s);
    } else if (op == 1) {  // a worker reads the rest of a batch, completes it and leaves
      for (std::size_t i = 0; i < r.size(); ++i) {
        auto& s = r.at(i);
        if (s.attached == 0) continue;
        if (s.status == state::filling) {
          read_all(s);
          (void)r.complete(s);
        }
        (void)r.detach(s);
        break;
      }
    } else if (op == 2) {  // next()
      if (r.step_past_epoch_end()) continue;
      auto* s = r.consumer_slot();
      if (s == nullptr || s->status != state::ready) continue;
      delivered.push_back(s->at);
      r.hand_out(*s);
      held.push_back(s);
    } else if (op == 3 && !held.empty()) {  // a batch goes
      auto const k = random() % held.size();
      r.release(*held[k]);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
    } else if (op == 4 && r.all_leased() && r.may_grow()) {  // held batches
      r.grow(f.new_slot(r.size()));
    } else if (op == 5 && random() % 50 == 0) {  // now and then, set_epoch to the next epoch
      auto const e = r.consumer().epoch + 1;
      (void)r.enter_epoch(e, r.at_start_of(e));
    }
    ASSERT_TRUE(holds(r, "step " + std::to_string(steps) + " (op " + std::to_string(op) + ")"));
  }
  ASSERT_GE(delivered.size(), 50U) << "the walk delivered too little to test anything";
  // In order: within an epoch one after the other, and an epoch left only forward.
  for (std::size_t k = 1; k < delivered.size(); ++k) {
    auto const& before = delivered[k - 1];
    auto const& now = delivered[k];
    if (now.epoch == before.epoch) {
      EXPECT_EQ(now.sequence, before.sequence + 1) << "delivery " << k;
    } else {
      EXPECT_GT(now.epoch, before.epoch) << "delivery " << k;
      EXPECT_EQ(now.sequence, 0U) << "delivery " << k;
    }
  }
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// What the ring may take (ring_memory.hpp), with the machine's memory given.

namespace {

gpufeed::detail::slot_layout one_byte_layout(std::size_t batch_size) {
  return {gpufeed::sample_spec{}.add("x", gpufeed::dtype::u8, {1}), batch_size};
}

TEST(ring_memory_test, ASlotCountsItsBatchAndItsPerSampleLists) {
  auto const layout = one_byte_layout(1000);
  EXPECT_EQ(layout.slot_bytes(), 1024U);
  EXPECT_EQ(gpufeed::detail::slot_footprint(layout), 1024U + 1000U * 32U);
  EXPECT_THROW((void)gpufeed::detail::slot_bookkeeping_bytes(SIZE_MAX / 8), gpufeed::logic_error);
}

TEST(ring_memory_test, LimitsFollowFromTheMachinesMemory) {
  auto o = gpufeed::test::small_options(1000, 2);
  o.prefetch_depth = 4;
  auto const layout = one_byte_layout(1000);
  auto const footprint = gpufeed::detail::slot_footprint(layout);
  // Fits exactly.
  auto const plan = gpufeed::detail::plan_ring(layout, o, 4 * footprint);
  EXPECT_EQ(plan.tuning.slots, 4U);
  EXPECT_EQ(plan.footprint, footprint);
  // One slot does not fit: batch_size is named.
  try {
    (void)gpufeed::detail::plan_ring(layout, o, footprint - 1);
    ADD_FAILURE() << "a slot larger than memory was accepted";
  } catch (gpufeed::out_of_memory const& e) {
    EXPECT_NE(std::string{e.what()}.find("loader_options::batch_size = 1000"), std::string::npos)
        << e.what();
  }
  // One slot fits, four do not: prefetch_depth is named.
  try {
    (void)gpufeed::detail::plan_ring(layout, o, 4 * footprint - 1);
    ADD_FAILURE() << "a ring larger than memory was accepted";
  } catch (gpufeed::out_of_memory const& e) {
    EXPECT_NE(std::string{e.what()}.find("loader_options::prefetch_depth = 4"), std::string::npos)
        << e.what();
  }
  // Unknown memory: nothing to check against.
  EXPECT_EQ(gpufeed::detail::plan_ring(layout, o, 0).tuning.slots, 4U);
}

TEST(ring_memory_test, HeldBatchesGrowWithinTheirBudgetCountingWholeSlots) {
  auto o = gpufeed::test::small_options(1000, 2);
  o.prefetch_depth = 2;
  auto const layout = one_byte_layout(1000);
  auto const footprint = gpufeed::detail::slot_footprint(layout);
  o.held_batches_budget = 7 * footprint + footprint / 2;
  EXPECT_EQ(gpufeed::detail::plan_ring(layout, o, 0).max_slots, 7U);
  o.held_batches_budget = 0;
  EXPECT_EQ(gpufeed::detail::plan_ring(layout, o, 0).max_slots, 2U) << "0: never grows";
  o.held_batches_budget = SIZE_MAX;
  EXPECT_EQ(gpufeed::detail::plan_ring(layout, o, 0).max_slots, gpufeed::detail::ring_slots_limit);
}

}  // namespace

// ---- open-ended epochs
// ---------------------------------------------------------------------------

// A ring over open-ended epochs of batches of 2, from `sources` sources.
class open_ended_fixture {
 public:
  explicit open_ended_fixture(std::size_t sources, std::size_t slots = 4)
      : options_{gpufeed::test::small_options(2, 1)},
        layout_{gpufeed::sample_spec{}.add("x", gpufeed::dtype::u8, {2}), 2},
        epochs_{0, 0, options_, true},
        ring_{epochs_, make_slots(slots), slots, slots, true, sources} {}

  ring& r() { return ring_; }

 private:
  std::vector<std::unique_ptr<slot>> make_slots(std::size_t count) const {
    std::vector<std::unique_ptr<slot>> out;
    for (std::size_t i = 0; i < count; ++i) {
      out.push_back(gpufeed::detail::make_slot(i, nullptr, layout_));
    }
    return out;
  }

  gpufeed::loader_options options_;
  gpufeed::detail::slot_layout layout_;
  epoch_source epochs_;
  ring ring_;
};

// A worker completes `s`: with data, or ended by `source`.
void finish(ring& r, slot& s, std::optional<std::size_t> ended_by = std::nullopt) {
  r.attach(s);
  read_all(s);
  s.ended = ended_by.has_value();
  s.source = ended_by.value_or(0);
  ASSERT_TRUE(r.complete(s));
  (void)r.detach(s);
}

TEST(ring_test, AnOpenEndedEpochEndsWhenItsLastSourceEnds) {
  open_ended_fixture f{2};
  auto& r = f.r();
  auto* a = r.start_next(1);
  auto* b = r.start_next(1);
  auto* c = r.start_next(1);
  ASSERT_TRUE(a != nullptr && b != nullptr && c != nullptr);
  EXPECT_EQ(c->at, (cursor{0, 2}));
  EXPECT_EQ(c->count, 2U) << "every batch of an open-ended plan is whole";
  EXPECT_FALSE(r.batches_of(0).has_value()) << "its length is not known yet";
  finish(r, *b, 0);
  finish(r, *a);  // data, from the source that has not ended
  EXPECT_EQ(r.producer(), (cursor{0, 3})) << "one source is still reading";
  finish(r, *c, 0);
  EXPECT_EQ(r.producer(), (cursor{0, 3})) << "a source ends once";
  EXPECT_TRUE(holds(r, "one source ended"));
  auto* d = r.start_next(1);
  ASSERT_NE(d, nullptr);
  finish(r, *d, 1);
  EXPECT_EQ(r.batches_of(0), 4U) << "what was planned when the last source ended";
  EXPECT_EQ(r.producer(), (cursor{1, 0})) << "nothing more of epoch 0 is planned";
  EXPECT_TRUE(holds(r, "every source ended"));
  // The consumer takes the batch with data and passes over the others, in order.
  EXPECT_FALSE(r.step_past_epoch_end());
  r.hand_out(*a);
  for (auto* ended : {b, c, d}) {
    EXPECT_EQ(r.consumer_slot(), ended);
    r.discard(*ended);
  }
  EXPECT_TRUE(r.step_past_epoch_end());
  EXPECT_EQ(r.consumer(), (cursor{1, 0}));
  EXPECT_FALSE(r.batches_of(1).has_value()) << "the next epoch's length is learned anew";
  r.release(*a);
  EXPECT_TRUE(holds(r, "the next epoch"));
}

TEST(ring_test, AFlushForgetsWhichSourcesEnded) {
  open_ended_fixture f{2};
  auto& r = f.r();
  auto* a = r.start_next(1);
  ASSERT_NE(a, nullptr);
  finish(r, *a, 0);
  r.flush({3, 0});
  auto* b = r.start_next(1);
  ASSERT_NE(b, nullptr);
  finish(r, *b, 1);
  EXPECT_EQ(r.producer(), (cursor{3, 1})) << "source 0 ended before the flush only";
  auto* c = r.start_next(1);
  ASSERT_NE(c, nullptr);
  finish(r, *c, 0);
  EXPECT_EQ(r.batches_of(3), 2U);
  EXPECT_EQ(r.producer(), (cursor{4, 0}));
  EXPECT_TRUE(holds(r, "an epoch after a flush"));
}
