// The batch plan: batches of exactly batch_size, accumulation steps, tail policies.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "gpufeed/batch_plan.hpp"
#include "gpufeed/error.hpp"
#include "support/test_datasets.hpp"

namespace gpufeed {
// Readable failures.
inline std::ostream& operator<<(std::ostream& os, step_info const& s) {
  return os << "{step " << s.step << ", micro " << s.micro << "/" << s.micros_in_step
            << ", samples " << s.samples_in_step << (s.last_micro ? ", last" : "")
            << (s.short_step ? ", short" : "") << "}";
}
inline std::ostream& operator<<(std::ostream& os, batch_span const& s) {
  return os << "[" << s.first << ", +" << s.count << ")";
}
}  // namespace gpufeed

namespace {

using gpufeed::batch_plan;
using gpufeed::tail_policy;
using gpufeed::test::reference_plan;

char const* name(tail_policy p) {
  return p == tail_policy::keep ? "keep" : "drop";
}

TEST(batch_plan_test, MatchesBruteForceAtEveryTail) {
  std::size_t checked = 0;
  for (std::size_t n = 0; n <= 41; ++n) {
    for (std::size_t bs = 1; bs <= 7; ++bs) {
      for (std::size_t k = 1; k <= 5; ++k) {
        for (auto lb : {tail_policy::keep, tail_policy::drop}) {
          for (auto ls : {tail_policy::keep, tail_policy::drop}) {
            SCOPED_TRACE(::testing::Message()
                         << "shard=" << n << " batch_size=" << bs << " K=" << k
                         << " last_batch=" << name(lb) << " last_step=" << name(ls));
            batch_plan plan{n, bs, k, lb, ls};
            auto ref = reference_plan(n, bs, k, lb, ls);
            ASSERT_EQ(plan.batches(), ref.size());
            std::size_t samples = 0;
            std::size_t steps = 0;
            for (std::size_t s = 0; s < ref.size(); ++s) {
              ASSERT_EQ(plan.span(s), (gpufeed::batch_span{ref[s].first, ref[s].count}))
                  << "batch " << s;
              ASSERT_EQ(plan.step(s), ref[s].step) << "batch " << s;
              samples += ref[s].count;
              steps = ref[s].step.step + 1;
            }
            EXPECT_EQ(plan.samples(), samples);
            EXPECT_EQ(plan.steps(), steps);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 42U * 7U * 5U * 4U);
}

TEST(batch_plan_test, StepInvariantsHold) {
  // Properties stated by the contract, checked directly (independently of the reference).
  for (std::size_t n : {1U, 9U, 10U, 11U, 64U, 99U, 100U, 101U}) {
    for (std::size_t bs : {1U, 3U, 8U, 10U}) {
      for (std::size_t k : {1U, 2U, 4U, 7U}) {
        for (auto lb : {tail_policy::keep, tail_policy::drop}) {
          for (auto ls : {tail_policy::keep, tail_policy::drop}) {
            SCOPED_TRACE(::testing::Message()
                         << "shard=" << n << " batch_size=" << bs << " K=" << k
                         << " last_batch=" << name(lb) << " last_step=" << name(ls));
            batch_plan plan{n, bs, k, lb, ls};
            std::size_t next_first = 0;
            for (std::size_t s = 0; s < plan.batches(); ++s) {
              auto span = plan.span(s);
              auto info = plan.step(s);
              // Contiguous batches of exactly batch_size, except a kept short last one.
              EXPECT_EQ(span.first, next_first);
              next_first = span.first + span.count;
              EXPECT_LE(next_first, n);
              if (s + 1 < plan.batches()) {
                EXPECT_EQ(span.count, bs);
              }
              EXPECT_GE(span.count, 1U);
              if (lb == tail_policy::drop) {
                EXPECT_EQ(span.count, bs);
              }
              // Steps group K consecutive micro-batches, numbered from 0.
              EXPECT_EQ(info.step, s / k);
              EXPECT_EQ(info.micro, s % k);
              EXPECT_LE(info.micros_in_step, k);
              EXPECT_GE(info.micros_in_step, 1U);
              EXPECT_EQ(info.last_micro, info.micro + 1 == info.micros_in_step);
              if (ls == tail_policy::drop) {
                EXPECT_EQ(info.micros_in_step, k);
              }
              EXPECT_EQ(info.short_step, info.samples_in_step < k * bs);
              EXPECT_LE(info.samples_in_step, info.micros_in_step * bs);
            }
            // The epoch ends on a step boundary: a step never straddles it.
            if (plan.batches() > 0) {
              EXPECT_TRUE(plan.step(plan.batches() - 1).last_micro);
            }
            EXPECT_EQ(plan.steps(), (plan.batches() + k - 1) / k);
          }
        }
      }
    }
  }
}

TEST(batch_plan_test, ShortTailsAreReported) {
  // 10 samples, batches of 4, steps of 2: batches [4, 4, 2] -> steps {4+4}, {2}.
  batch_plan keep{10, 4, 2, tail_policy::keep, tail_policy::keep};
  ASSERT_EQ(keep.batches(), 3U);
  ASSERT_EQ(keep.steps(), 2U);
  EXPECT_EQ(keep.samples(), 10U);
  EXPECT_EQ(keep.span(2), (gpufeed::batch_span{8, 2}));
  EXPECT_EQ(keep.step(0), (gpufeed::step_info{0, 0, 2, 8, false, false}));
  EXPECT_EQ(keep.step(1), (gpufeed::step_info{0, 1, 2, 8, true, false}));
  EXPECT_EQ(keep.step(2), (gpufeed::step_info{1, 0, 1, 2, true, true}));

  // Dropping the short batch leaves [4, 4]: one full step.
  batch_plan drop_batch{10, 4, 2, tail_policy::drop, tail_policy::keep};
  EXPECT_EQ(drop_batch.batches(), 2U);
  EXPECT_EQ(drop_batch.steps(), 1U);
  EXPECT_EQ(drop_batch.samples(), 8U);

  // Dropping the short step leaves the same.
  batch_plan drop_step{10, 4, 2, tail_policy::keep, tail_policy::drop};
  EXPECT_EQ(drop_step.batches(), 2U);
  EXPECT_EQ(drop_step.steps(), 1U);

  // A full count of micro-batches whose last one is short is still a short step.
  batch_plan short_samples{14, 4, 2, tail_policy::keep, tail_policy::drop};
  ASSERT_EQ(short_samples.batches(), 4U);
  EXPECT_EQ(short_samples.step(3), (gpufeed::step_info{1, 1, 2, 6, true, true}));
}

TEST(batch_plan_test, EmptyAndTinyShards) {
  batch_plan empty{0, 4, 2, tail_policy::keep, tail_policy::keep};
  EXPECT_EQ(empty.batches(), 0U);
  EXPECT_EQ(empty.steps(), 0U);
  EXPECT_EQ(empty.samples(), 0U);
  batch_plan tiny_drop{3, 4, 1, tail_policy::drop, tail_policy::keep};
  EXPECT_EQ(tiny_drop.batches(), 0U);
  EXPECT_EQ(tiny_drop.samples(), 0U);
  batch_plan tiny_step_drop{3, 1, 4, tail_policy::keep, tail_policy::drop};
  EXPECT_EQ(tiny_step_drop.batches(), 0U);
  EXPECT_EQ(tiny_step_drop.steps(), 0U);
}

TEST(batch_plan_test, LargeShardsNeedNoStorage) {
  // Pure arithmetic: a billion-sample shard is as cheap as a small one.
  std::size_t const n = 1'000'000'007;
  batch_plan plan{n, 256, 8, tail_policy::keep, tail_policy::keep};
  std::size_t const batches = (n + 255) / 256;
  ASSERT_EQ(plan.batches(), batches);
  EXPECT_EQ(plan.steps(), (batches + 7) / 8);
  EXPECT_EQ(plan.samples(), n);
  EXPECT_EQ(plan.span(batches - 1), (gpufeed::batch_span{(batches - 1) * 256, n % 256}));
  auto last = plan.step(batches - 1);
  EXPECT_TRUE(last.last_micro);
  EXPECT_EQ(last.micros_in_step, batches % 8 == 0 ? 8U : batches % 8);
}

TEST(batch_plan_test, RejectsZeroSizes) {
  EXPECT_THROW((batch_plan{10, 0, 1, tail_policy::keep, tail_policy::keep}), gpufeed::logic_error);
  EXPECT_THROW((batch_plan{10, 4, 0, tail_policy::keep, tail_policy::keep}), gpufeed::logic_error);
}

}  // namespace

// ---- plans made from explicit batch sizes (a caller's batch sampler) -------------------------

TEST(batch_plan_test, ExplicitFullSizesMatchTheArithmeticPlan) {
  for (std::size_t n : {0U, 1U, 8U, 12U, 40U}) {
    for (std::size_t k : {1U, 3U}) {
      for (auto ls : {tail_policy::keep, tail_policy::drop}) {
        SCOPED_TRACE(::testing::Message() << "batches=" << n << " K=" << k << " " << name(ls));
        std::vector<std::size_t> sizes(n, 4);
        batch_plan explicit_plan{sizes, 4, k, ls};
        batch_plan arithmetic{n * 4, 4, k, tail_policy::keep, ls};
        ASSERT_EQ(explicit_plan.batches(), arithmetic.batches());
        EXPECT_EQ(explicit_plan.steps(), arithmetic.steps());
        EXPECT_EQ(explicit_plan.samples(), arithmetic.samples());
        for (std::size_t s = 0; s < arithmetic.batches(); ++s) {
          EXPECT_EQ(explicit_plan.span(s), arithmetic.span(s)) << "batch " << s;
          EXPECT_EQ(explicit_plan.step(s), arithmetic.step(s)) << "batch " << s;
        }
      }
    }
  }
}

TEST(batch_plan_test, ExplicitSizesAreContiguousAndStepsSumThem) {
  std::vector<std::size_t> const sizes{3, 1, 4, 1, 5, 2, 6, 5, 3};
  for (std::size_t k : {1U, 2U, 4U}) {
    for (auto ls : {tail_policy::keep, tail_policy::drop}) {
      SCOPED_TRACE(::testing::Message() << "K=" << k << " last_step=" << name(ls));
      batch_plan plan{sizes, 6, k, ls};
      auto const expected_batches =
          ls == tail_policy::keep ? sizes.size() : sizes.size() - sizes.size() % k;
      ASSERT_EQ(plan.batches(), expected_batches);
      std::size_t first = 0;
      for (std::size_t b = 0; b < plan.batches(); ++b) {
        EXPECT_EQ(plan.span(b), (gpufeed::batch_span{first, sizes[b]})) << "batch " << b;
        first += sizes[b];
        // Brute force: the step's samples are the sum of its batches' sizes.
        auto const step_first = b / k * k;
        auto const step_end = std::min(step_first + k, plan.batches());
        std::size_t in_step = 0;
        for (auto i = step_first; i < step_end; ++i) {
          in_step += sizes[i];
        }
        auto const info = plan.step(b);
        EXPECT_EQ(info.step, b / k);
        EXPECT_EQ(info.micro, b % k);
        EXPECT_EQ(info.micros_in_step, step_end - step_first);
        EXPECT_EQ(info.samples_in_step, in_step) << "batch " << b;
        EXPECT_EQ(info.last_micro, b + 1 == step_end);
        EXPECT_EQ(info.short_step, in_step < k * 6);
      }
      EXPECT_EQ(plan.samples(), first);
    }
  }
}

TEST(batch_plan_test, ExplicitSizesOutOfRangeAreRefused) {
  std::vector<std::size_t> const zero{2, 0, 1};
  std::vector<std::size_t> const too_big{2, 5, 1};
  EXPECT_THROW((batch_plan{zero, 4, 1, tail_policy::keep}), gpufeed::logic_error);
  try {
    batch_plan plan{too_big, 4, 1, tail_policy::keep};
    FAIL() << "a batch of 5 was accepted with batch_size 4";
  } catch (gpufeed::logic_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("batch 1 has 5 samples"), std::string::npos) << e.what();
  }
}
