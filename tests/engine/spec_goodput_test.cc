// The cost-aware switch of speculative decoding (src/engine/spec_goodput.h):
// the step-time model, the expected run length, the goodput choice on
// hand-computed cases, and the acceptance estimate.
#include "engine/spec_goodput.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tessera {
namespace {

TEST(StepTimeModel, InterpolatesBetweenMeasuredRowCountsAndIsOptimisticOutside) {
  StepTimeModel m;
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.estimate(5), 0.0);
  m.observe(4, 20.0);
  EXPECT_DOUBLE_EQ(m.estimate(2), 10.0);  // below the smallest: proportional
  EXPECT_DOUBLE_EQ(m.estimate(8), 20.0);  // above the largest: flat
  m = StepTimeModel();
  m.observe(1, 10.0);
  m.observe(5, 30.0);
  EXPECT_DOUBLE_EQ(m.estimate(1), 10.0);
  EXPECT_DOUBLE_EQ(m.estimate(3), 20.0);  // halfway between 1 and 5
  EXPECT_DOUBLE_EQ(m.estimate(4), 25.0);
  EXPECT_DOUBLE_EQ(m.estimate(9), 30.0);  // above the largest: the largest's
  m.observe(3, 12.0);
  EXPECT_DOUBLE_EQ(m.estimate(2), 11.0);
  EXPECT_DOUBLE_EQ(m.estimate(4), 21.0);
  // Row counts past kMaxRows share its bucket; nonsense is ignored.
  m.observe(StepTimeModel::kMaxRows + 500, 99.0);
  EXPECT_DOUBLE_EQ(m.estimate(StepTimeModel::kMaxRows), 99.0);
  m.observe(0, 1.0);
  m.observe(2, -1.0);
  m.observe(2, std::nan(""));
  EXPECT_DOUBLE_EQ(m.estimate(2), 11.0);
}

TEST(StepTimeModel, AMeasurementMovesTheAverageBySmoothing) {
  StepTimeModel m;
  m.observe(4, 10.0);
  m.observe(4, 20.0);
  EXPECT_DOUBLE_EQ(m.estimate(4), 10.0 + StepTimeModel::kSmoothing * 10.0);
}

TEST(ExpectedEmittedTokens, IsTheGeometricSum) {
  EXPECT_DOUBLE_EQ(expected_emitted_tokens(0.7, 0), 1.0);
  EXPECT_DOUBLE_EQ(expected_emitted_tokens(0.0, 4), 1.0);
  EXPECT_DOUBLE_EQ(expected_emitted_tokens(1.0, 4), 5.0);
  EXPECT_NEAR(expected_emitted_tokens(0.5, 3), (1 - std::pow(0.5, 4)) / 0.5, 1e-12);  // 1.875
  EXPECT_NEAR(expected_emitted_tokens(0.8, 5), (1 - std::pow(0.8, 6)) / 0.2, 1e-12);
}

StepTimeModel model_of(const std::vector<double>& ms_by_rows) {  // index 0 = 1 row
  StepTimeModel m;
  for (size_t i = 0; i < ms_by_rows.size(); ++i) m.observe(static_cast<int64_t>(i) + 1, ms_by_rows[i]);
  return m;
}

TEST(ChooseLookaheadCap, MemoryBoundStepsSpeculateComputeBoundOnesDoNot) {
  const std::vector<SpecCandidate> one = {{0.6, 4}};
  // Extra rows nearly free (bandwidth-bound): 1 + .6 + .36 + .216 + .1296 = 2.3056 tokens in 10.4 ms beats 1 in 10.
  EXPECT_EQ(choose_lookahead_cap(one, 0, model_of({10, 10.1, 10.2, 10.3, 10.4}), nullptr), 4);
  // Every row costs as much as the first (compute-bound): E(m) / (m + 1) < 1, so no speculation.
  EXPECT_EQ(choose_lookahead_cap(one, 0, model_of({10, 20, 30, 40, 50}), nullptr), 0);
  // Cheap second row, expensive after: cap 1 gives 1.6 / 11 > 1 / 10, cap 2 gives 1.96 / 25.
  EXPECT_EQ(choose_lookahead_cap(one, 0, model_of({10, 11, 25, 40, 55}), nullptr), 1);
}

TEST(ChooseLookaheadCap, AcceptanceDecides) {
  // Rows cost 1 + 0.5 per extra row: goodput(c) = E(alpha, c) / (1 + 0.5 c).
  const StepTimeModel m = model_of({1, 1.5, 2, 2.5, 3});
  // alpha 0.9: E = 1, 1.9, 2.71, 3.439, 4.0951 -> 1, 1.267, 1.355, 1.376, 1.365: cap 3.
  EXPECT_EQ(choose_lookahead_cap(std::vector<SpecCandidate>{{0.9, 4}}, 0, m, nullptr), 3);
  // alpha 0.4: E(1) / 1.5 = 0.933 < 1: none.
  EXPECT_EQ(choose_lookahead_cap(std::vector<SpecCandidate>{{0.4, 4}}, 0, m, nullptr), 0);
  // A sequence that proposed nothing cannot be capped above 0.
  EXPECT_EQ(choose_lookahead_cap(std::vector<SpecCandidate>{{0.9, 0}}, 0, m, nullptr), 0);
}

TEST(ChooseLookaheadCap, OtherRowsAndDraftCostCount) {
  // 8 rows of other sequences plus one speculating: the step's 9 rows cost 9;
  // each extra row 1 more (compute-bound batch): (8 + E(c)) / (9 + c) < 1 for any c.
  StepTimeModel linear;
  for (int r = 1; r <= 16; ++r) linear.observe(r, r);
  EXPECT_EQ(choose_lookahead_cap(std::vector<SpecCandidate>{{0.9, 4}}, 8, linear, nullptr), 0);
  // A flat step time: speculation pays, unless drafting costs more than it saves.
  StepTimeModel flat;
  for (int r = 1; r <= 16; ++r) flat.observe(r, 10);
  const std::vector<SpecCandidate> s = {{0.5, 4}};
  EXPECT_EQ(choose_lookahead_cap(s, 0, flat, nullptr), 4);
  // Drafting 10 ms per token: (1 + .5) / 20 < 1 / 10.
  EXPECT_EQ(choose_lookahead_cap(s, 0, flat, [](int32_t c) { return 10.0 * c; }), 0);
  // Drafting 1 ms per token: E(c) / (10 + c) = 1.5/11 = 0.13636, 1.75/12 = 0.14583,
  // 1.875/13 = 0.14423, 1.9375/14 = 0.13839: cap 2.
  EXPECT_EQ(choose_lookahead_cap(s, 0, flat, [](int32_t c) { return 1.0 * c; }), 2);
}

TEST(ChooseLookaheadCap, NoMeasurementYetExplores) {
  EXPECT_EQ(choose_lookahead_cap(std::vector<SpecCandidate>{{0.1, 3}, {0.2, 5}}, 0, StepTimeModel(), nullptr), 5);
}

TEST(AcceptanceEstimate, MovesTowardsTheOutcomes) {
  AcceptanceEstimate a;
  EXPECT_DOUBLE_EQ(a.value(), AcceptanceEstimate::kPrior);
  const double w = AcceptanceEstimate::kSmoothing;
  a.observe(3, 1);  // one acceptance, then a rejection
  double want = AcceptanceEstimate::kPrior;
  want += w * (1 - want);
  want += w * (0 - want);
  EXPECT_DOUBLE_EQ(a.value(), want);
  a.observe(2, 2);  // both accepted: no rejection counted
  want += w * (1 - want);
  want += w * (1 - want);
  EXPECT_DOUBLE_EQ(a.value(), want);
  for (int i = 0; i < 200; ++i) a.observe(4, 0);
  EXPECT_LT(a.value(), 1e-6);
}

}  // namespace
}  // namespace tessera
