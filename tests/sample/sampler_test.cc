#include "sample/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

namespace tessera {
namespace {

const std::vector<float> kLogits = {1.0f, 2.0f, 0.5f, 3.0f, -1.0f, 2.5f};

std::vector<double> softmax(const std::vector<float>& z, float t) {
  std::vector<double> p(z.size());
  double sum = 0;
  for (size_t i = 0; i < z.size(); ++i) sum += p[i] = std::exp(z[i] / t);
  for (double& v : p) v /= sum;
  return p;
}

// Pearson chi-square statistic of `counts` against `expected` probabilities
// (zero-probability categories must have zero counts).
double chi_square(const std::vector<int>& counts, const std::vector<double>& expected, int n, int* dof) {
  double chi = 0;
  *dof = -1;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (expected[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has zero probability";
      continue;
    }
    const double e = expected[i] * n;
    chi += (counts[i] - e) * (counts[i] - e) / e;
    ++*dof;
  }
  return chi;
}

// Critical values of chi-square at significance 0.001, by degrees of freedom.
double chi_critical_001(int dof) {
  static const double kTable[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46};
  return kTable[dof];
}

std::vector<int> draw(const SamplingParams& p, int n) {
  Sampler s(p);
  std::vector<int> counts(kLogits.size());
  for (int i = 0; i < n; ++i) counts[static_cast<size_t>(s.sample(kLogits, i))]++;
  return counts;
}

void expect_distribution(const SamplingParams& params, const std::vector<double>& expected) {
  const int n = 200000;
  const auto counts = draw(params, n);
  int dof = 0;
  const double chi = chi_square(counts, expected, n, &dof);
  ASSERT_GE(dof, 1);
  EXPECT_LT(chi, chi_critical_001(dof)) << "chi-square " << chi << " with " << dof << " degrees of freedom";
}

std::vector<double> restrict_and_normalise(std::vector<double> p, const std::vector<int>& keep) {
  std::vector<double> out(p.size(), 0.0);
  double sum = 0;
  for (int i : keep) sum += p[static_cast<size_t>(i)];
  for (int i : keep) out[static_cast<size_t>(i)] = p[static_cast<size_t>(i)] / sum;
  return out;
}

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p);
  EXPECT_EQ(s.sample(kLogits, 0), 3);
  const std::vector<float> tie = {0.0f, 5.0f, 5.0f};
  EXPECT_EQ(s.sample(tie, 0), 1);
}

TEST(Sampler, TemperatureMatchesSoftmax) {
  for (float t : {0.5f, 1.0f, 2.0f}) {
    SamplingParams p{t, 0, 1.0f, 0.0f, 1234};
    expect_distribution(p, softmax(kLogits, t));
  }
}

TEST(Sampler, TopKKeepsTheKMostLikely) {
  SamplingParams p{1.0f, 3, 1.0f, 0.0f, 7};
  expect_distribution(p, restrict_and_normalise(softmax(kLogits, 1.0f), {3, 5, 1}));
}

TEST(Sampler, TopPKeepsSmallestNucleus) {
  // Probabilities at T=1 sorted: 3 (0.43), 5 (0.26), 1 (0.16), 0 (0.06), ...
  const auto full = softmax(kLogits, 1.0f);
  SamplingParams p{1.0f, 0, 0.8f, 0.0f, 99};
  ASSERT_LT(full[3] + full[5], 0.8);
  ASSERT_GE(full[3] + full[5] + full[1], 0.8);
  expect_distribution(p, restrict_and_normalise(full, {3, 5, 1}));
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
  const auto full = softmax(kLogits, 1.0f);
  SamplingParams p{1.0f, 0, 1.0f, 0.3f, 5};  // keep p >= 0.3 * p_max
  std::vector<int> keep;
  for (int i = 0; i < 6; ++i) {
    if (full[static_cast<size_t>(i)] >= 0.3 * full[3]) keep.push_back(i);
  }
  expect_distribution(p, restrict_and_normalise(full, keep));
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
  SamplingParams p{2.0f, 4, 0.9f, 0.5f, 11};
  expect_distribution(p, restrict_and_normalise(t2, keep));
}

TEST(Sampler, SeedAndPositionDetermineTheDraw) {
  SamplingParams p{1.0f, 0, 1.0f, 0.0f, 42};
  Sampler a(p), b(p);
  for (int pos = 0; pos < 100; ++pos) EXPECT_EQ(a.sample(kLogits, pos), b.sample(kLogits, pos));
  // Order of calls does not matter: the draw is a function of (seed, position).
  Sampler c(p);
  EXPECT_EQ(c.sample(kLogits, 57), a.sample(kLogits, 57));
  p.seed = 43;
  Sampler d(p);
  int differ = 0;
  for (int pos = 0; pos < 100; ++pos) differ += d.sample(kLogits, pos) != a.sample(kLogits, pos);
  EXPECT_GT(differ, 20);
}

TEST(SamplingParams, Validation) {
  EXPECT_TRUE(SamplingParams{}.validate().ok());
  EXPECT_FALSE((SamplingParams{-1.0f, 0, 1.0f, 0.0f, 0}).validate().ok());
  EXPECT_FALSE((SamplingParams{1.0f, 0, 0.0f, 0.0f, 0}).validate().ok());
  EXPECT_FALSE((SamplingParams{1.0f, 0, 1.5f, 0.0f, 0}).validate().ok());
  EXPECT_FALSE((SamplingParams{1.0f, 0, 1.0f, 2.0f, 0}).validate().ok());
}

}  // namespace
}  // namespace tessera
