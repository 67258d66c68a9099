// random-model's synthetic repetitive weights (RandomModelShape::greedy_cycle):
// the successor map is a permutation with the stated cycles, and greedy
// decoding of such a model follows it token by token, in every weight type
// the speculative-decoding benchmark uses.
#include <gtest/gtest.h>

#include <vector>

#include "model_test_util.h"

namespace tessera {
namespace {

TEST(RandomModelCycle, SuccessorIsAPermutationOfPeriodN) {
  constexpr int kVocab = 300;
  for (int n : {1, 2, 5, 8, 16}) {
    std::vector<int> hits(kVocab, 0);
    for (int32_t t = 0; t < kVocab; ++t) {
      const int32_t s = greedy_cycle_successor(t, n, kVocab);
      ASSERT_GE(s, 0);
      ASSERT_LT(s, kVocab);
      ++hits[static_cast<size_t>(s)];
      // n steps return to t; fewer do not, except for the fixed points.
      int32_t u = t;
      int period = 0;
      do {
        u = greedy_cycle_successor(u, n, kVocab);
        ++period;
      } while (u != t && period <= n);
      const bool full_group = t >= 3 && 3 + ((t - 3) / n + 1) * n <= kVocab;
      EXPECT_EQ(period, full_group ? n : 1) << "n " << n << " token " << t;
    }
    for (int h : hits) EXPECT_EQ(h, 1) << "n " << n;
  }
  EXPECT_EQ(greedy_cycle_successor(3, 4, 512), 4);
  EXPECT_EQ(greedy_cycle_successor(6, 4, 512), 3);
  EXPECT_EQ(greedy_cycle_successor(1, 4, 512), 1);  // <s>
}

TEST(RandomModelCycle, GreedyDecodingFollowsTheCycle) {
  RandomModelShape shape = *random_model_preset("tiny");
  shape.name = "tiny-cycle";
  shape.n_embd = 256;
  shape.n_ff = 512;
  shape.greedy_cycle = 6;
  for (DType dtype : {DType::kF32, DType::kQ8_0, DType::kQ4_0}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto model = testing::load_random_model(shape, dtype, 11);
    ASSERT_NE(model, nullptr);
    auto engine = testing::make_engine(*model, testing::cpu_backend(2), 0, 256);
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    for (int32_t start : {3, 100, 400}) {
      const std::vector<int32_t> prompt = {1, 77, 200, start};
      const std::vector<int32_t> got = testing::greedy(**engine, prompt, 20);
      ASSERT_EQ(got.size(), 20u);
      int32_t prev = start;
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i], greedy_cycle_successor(prev, shape.greedy_cycle, shape.n_vocab)) << "position " << i;
        prev = got[i];
      }
    }
  }
}

}  // namespace
}  // namespace tessera
