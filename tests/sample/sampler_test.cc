#include "sample/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace tessera {
namespace {

const std::vector<float> kLogits = {1.0f, 2.0f, 0.5f, 3.0f, -1.0f, 2.5f};
constexpr float kInf = std::numeric_limits<float>::infinity();

// Parameters with every processor disabled.
SamplingParams plain(float t, uint64_t seed) {
  SamplingParams p;
  p.temperature = t;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

std::vector<double> softmax(const std::vector<float>& z, float t) {
  std::vector<double> p(z.size());
  double sum = 0;
  for (size_t i = 0; i < z.size(); ++i) sum += p[i] = std::exp(static_cast<double>(z[i]) / t);
  for (double& v : p) v /= sum;
  return p;
}

std::vector<double> restrict_and_normalise(const std::vector<double>& p, const std::vector<int>& keep) {
  std::vector<double> out(p.size(), 0.0);
  double sum = 0;
  for (int i : keep) sum += p[static_cast<size_t>(i)];
  for (int i : keep) out[static_cast<size_t>(i)] = p[static_cast<size_t>(i)] / sum;
  return out;
}

// Significance level of every distribution test: 0.001, with fixed seeds so
// the outcome is deterministic. Critical values of chi-square by degrees of freedom.
double chi_critical_001(int dof) {
  static const double kTable[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46};
  return kTable[dof];
}

// Draws 200,000 tokens (one per position, as a sequence would) and compares
// the counts with `expected` by Pearson's chi-square test.
void expect_distribution(const SamplingParams& params, const std::vector<double>& expected,
                         const std::vector<float>& logits = kLogits) {
  const int n = 200000;
  Sampler s(params);
  std::vector<int> counts(logits.size());
  for (int i = 0; i < n; ++i) counts[static_cast<size_t>(*s.sample(logits, i))]++;
  double chi = 0;
  int dof = -1;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (expected[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has zero probability";
      continue;
    }
    const double e = expected[i] * n;
    chi += (counts[i] - e) * (counts[i] - e) / e;
    ++dof;
  }
  if (dof == 0) return;  // a single possible token: the counts check above is the test
  ASSERT_GE(dof, 1);
  EXPECT_LT(chi, chi_critical_001(dof)) << "chi-square " << chi << " with " << dof << " degrees of freedom";
}

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
  Sampler s(plain(0, 1));
  EXPECT_EQ(*s.sample(kLogits, 0), 3);
  const std::vector<float> tie = {0.0f, 5.0f, 5.0f};
  EXPECT_EQ(*s.sample(tie, 0), 1);
}

TEST(Sampler, TemperatureMatchesSoftmax) {
  for (float t : {0.5f, 1.0f, 2.0f}) expect_distribution(plain(t, 1234), softmax(kLogits, t));
}

TEST(Sampler, TopKKeepsTheKMostLikely) {
  SamplingParams p = plain(1.0f, 7);
  p.top_k = 3;
  expect_distribution(p, restrict_and_normalise(softmax(kLogits, 1.0f), {3, 5, 1}));
}

TEST(Sampler, TopPKeepsSmallestNucleus) {
  // Probabilities at T=1 sorted: 3 (0.45), 5 (0.27), 1 (0.17), 0 (0.06), ...
  const auto full = softmax(kLogits, 1.0f);
  ASSERT_LT(full[3] + full[5], 0.8);
  ASSERT_GE(full[3] + full[5] + full[1], 0.8);
  SamplingParams p = plain(1.0f, 99);
  p.top_p = 0.8f;
  expect_distribution(p, restrict_and_normalise(full, {3, 5, 1}));
}

TEST(Sampler, TopPOnALargeVocabularyUsesTheNucleusOnly) {
  // 5000 tokens: the nucleus spans several selection rounds (64, 512, ...).
  std::vector<float> logits(5000);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = -0.0005f * static_cast<float>((i * 7919) % 5000);
  const auto full = softmax(logits, 1.0f);
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)]; });
  std::vector<int> keep;
  double cum = 0;
  for (int i : order) {
    keep.push_back(i);
    cum += full[static_cast<size_t>(i)];
    if (cum >= 0.3) break;
  }
  ASSERT_GT(keep.size(), 512u);
  SamplingParams p = plain(1.0f, 3);
  p.top_p = 0.3f;
  Sampler s(p);
  std::vector<bool> allowed(logits.size());
  for (int i : keep) allowed[static_cast<size_t>(i)] = true;
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE(allowed[static_cast<size_t>(*s.sample(logits, i))]);
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
  const auto full = softmax(kLogits, 1.0f);
  SamplingParams p = plain(1.0f, 5);
  p.min_p = 0.3f;  // keep p >= 0.3 * p_max
  std::vector<int> keep;
  for (int i = 0; i < 6; ++i) {
    if (full[static_cast<size_t>(i)] >= 0.3 * full[3]) keep.push_back(i);
  }
  expect_distribution(p, restrict_and_normalise(full, keep));
}

TEST(Sampler, TypicalKeepsTokensNearTheEntropy) {
  const auto full = softmax(kLogits, 1.0f);
  double h = 0;
  for (double v : full) h -= v * std::log(v);
  std::vector<int> order = {0, 1, 2, 3, 4, 5};
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return std::fabs(-std::log(full[static_cast<size_t>(a)]) - h) < std::fabs(-std::log(full[static_cast<size_t>(b)]) - h);
  });
  std::vector<int> keep;
  double cum = 0;
  for (int i : order) {
    keep.push_back(i);
    cum += full[static_cast<size_t>(i)];
    if (cum >= 0.5) break;
  }
  SamplingParams p = plain(1.0f, 17);
  p.typical_p = 0.5f;
  expect_distribution(p, restrict_and_normalise(full, keep));
}

TEST(Sampler, LogitBiasShiftsTheDistribution) {
  SamplingParams p = plain(1.0f, 23);
  p.logit_bias = {{4, 3.0f}, {3, -1.0f}};
  std::vector<float> biased = kLogits;
  biased[4] += 3.0f;
  biased[3] -= 1.0f;
  expect_distribution(p, softmax(biased, 1.0f));
}

TEST(Sampler, PenaltiesFollowTheirDefinitions) {
  // Repetition (HF): over prompt + output, divide positive logits, multiply negative ones.
  // Presence / frequency (OpenAI): over output only.
  SamplingParams p = plain(1.0f, 29);
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  const std::vector<int32_t> prompt = {3, 4};
  Sampler s(p, prompt);
  s.accept(5);
  s.accept(5);
  std::vector<float> want = kLogits;
  want[3] = 3.0f / 2.0f;     // prompt token, positive
  want[4] = -1.0f * 2.0f;    // prompt token, negative
  want[5] = 2.5f / 2.0f - 0.5f - 0.25f * 2;  // output token twice
  const int n = 200000;
  std::vector<int> counts(6);
  for (int i = 0; i < n; ++i) counts[static_cast<size_t>(*s.sample(kLogits, i))]++;
  const auto expected = softmax(want, 1.0f);
  double chi = 0;
  for (size_t i = 0; i < 6; ++i) chi += std::pow(counts[i] - expected[i] * n, 2) / (expected[i] * n);
  EXPECT_LT(chi, chi_critical_001(5));
}

TEST(Sampler, CombinedTopKTopPMinP) {
  const auto t2 = softmax(kLogits, 2.0f);
  // top-k 4 -> {3, 5, 1, 0}; renormalised, top-p 0.9 then min-p 0.5 of the max.
  std::vector<int> order = {3, 5, 1, 0};
  std::vector<double> p4 = restrict_and_normalise(t2, order);
  double cum = 0;
  std::vector<int> nucleus;
  for (int i : order) {
    cum += p4[static_cast<size_t>(i)];
    nucleus.push_back(i);
    if (cum >= 0.9) break;
  }
  std::vector<int> keep;
  for (int i : nucleus) {
    if (p4[static_cast<size_t>(i)] >= 0.5 * p4[3]) keep.push_back(i);
  }
  SamplingParams p = plain(2.0f, 11);
  p.top_k = 4;
  p.top_p = 0.9f;
  p.min_p = 0.5f;
  expect_distribution(p, restrict_and_normalise(t2, keep));
}

TEST(Sampler, EdgeCasesChangeNothingOrReduceToGreedy) {
  const auto full = softmax(kLogits, 1.0f);
  SamplingParams k1 = plain(1.0f, 1);
  k1.top_k = 1;
  Sampler s1(k1);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(*s1.sample(kLogits, i), 3);  // top_k = 1 is greedy
  SamplingParams big_k = plain(1.0f, 41);
  big_k.top_k = 1000;  // >= vocabulary size
  expect_distribution(big_k, full);
  SamplingParams tiny_t = plain(1e-4f, 2);  // a tiny temperature approaches greedy
  Sampler st(tiny_t);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(*st.sample(kLogits, i), 3);
  // top_p = 1, min_p = 0, typical_p = 1 are the defaults of plain(): the plain softmax test covers them.
}

TEST(Sampler, AllButOneNegativeInfinity) {
  const std::vector<float> one = {-kInf, -kInf, 0.7f, -kInf};
  SamplingParams p = plain(1.0f, 8);
  p.top_p = 0.5f;
  p.min_p = 0.2f;
  Sampler s(p);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(*s.sample(one, i), 2);
}

TEST(Sampler, NanOrInfinityIsAnError) {
  Sampler s(plain(1.0f, 1));
  const std::vector<float> nan = {0.0f, std::nanf(""), 1.0f};
  const std::vector<float> inf = {0.0f, kInf, 1.0f};
  const std::vector<float> all_neg = {-kInf, -kInf};
  EXPECT_EQ(s.sample(nan, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.sample(inf, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.sample(all_neg, 0).status().code(), StatusCode::kInvalidArgument);
  Sampler g(plain(0, 1));
  EXPECT_FALSE(g.sample(nan, 0).ok());
}

TEST(Sampler, SuppressedTokensNeverAppear) {
  Sampler s(plain(1.0f, 4));
  const std::vector<int32_t> suppressed = {3, 5};
  for (int i = 0; i < 5000; ++i) {
    const int32_t t = *s.sample(kLogits, i, suppressed);
    EXPECT_NE(t, 3);
    EXPECT_NE(t, 5);
  }
}

TEST(Sampler, SeedAndPositionDetermineTheDraw) {
  const SamplingParams p = plain(1.0f, 42);
  Sampler a(p), b(p);
  for (int pos = 0; pos < 100; ++pos) EXPECT_EQ(*a.sample(kLogits, pos), *b.sample(kLogits, pos));
  // Order of calls does not matter: the draw is a function of (seed, position).
  Sampler c(p);
  EXPECT_EQ(*c.sample(kLogits, 57), *a.sample(kLogits, 57));
  Sampler d(plain(1.0f, 43));
  int differ = 0;
  for (int pos = 0; pos < 100; ++pos) differ += *d.sample(kLogits, pos) != *a.sample(kLogits, pos);
  EXPECT_GT(differ, 20);
  EXPECT_NE(choice_seed(42, 1), choice_seed(42, 2));
  EXPECT_EQ(choice_seed(42, 0), 42u);
}

TEST(SamplingParams, Validation) {
  EXPECT_TRUE(SamplingParams{}.validate(10).ok());
  auto bad = [](auto edit) {
    SamplingParams p;
    edit(p);
    return !p.validate(10).ok();
  };
  EXPECT_TRUE(bad([](SamplingParams& p) { p.temperature = -1; }));
  EXPECT_TRUE(bad([](SamplingParams& p) { p.top_p = 0; }));
  EXPECT_TRUE(bad([](SamplingParams& p) { p.top_p = 1.5f; }));
  EXPECT_TRUE(bad([](SamplingParams& p) { p.min_p = 2; }));
  EXPECT_TRUE(bad([](SamplingParams& p) { p.typical_p = 0; }));
  EXPECT_TRUE(bad([](SamplingParams& p) { p.repetition_penalty = 0; }));
  EXPECT_TRUE(bad([](SamplingParams& p) { p.presence_penalty = 3; }));
  EXPECT_TRUE(bad([](SamplingParams& p) { p.logit_bias = {{10, 1.0f}}; }));
  EXPECT_TRUE(bad([](SamplingParams& p) { p.logit_bias = {{-1, 1.0f}}; }));
  EXPECT_TRUE(bad([](SamplingParams& p) { p.logit_bias = {{1, std::nanf("")}}; }));
}

}  // namespace
}  // namespace tessera
