// Hugging Face reference fixtures: tiny random-weight models saved by
// transformers, with logits and greedy continuations computed by transformers
// in float32 (../shared/fixtures/hf/<name>/reference.json).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/cpu_features.h"
#include "hf_reference.h"
#include "kv/block_table.h"
#include "model_test_util.h"
#include "sample/sampler.h"
#include "test_support.h"

namespace tessera {
namespace {

using nlohmann::json;

class HfFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(HfFixture, MatchesTransformersReference) {
  TESSERA_REQUIRE_SHARED_FILE(ref_path, "fixtures/hf/" + GetParam() + "/reference.json");
  const std::string dir = testing::shared_path("fixtures/hf/" + GetParam());
  auto model = Model::load(dir);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const auto refs = testing::load_hf_reference(ref_path);
  ASSERT_EQ(refs.size(), 3u);
  const auto nv = static_cast<size_t>((*model)->config().n_vocab);
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_name(isa));
    // An f32 KV cache: the reference is float32 throughout (f16 K/V alone moves logits by ~1e-3).
    auto gen = testing::make_engine(**model, testing::cpu_backend(2, isa), 0, 256, KvDtype::kF32);
    ASSERT_TRUE(gen.ok());
    for (const testing::HfReference& r : refs) {
      const auto logits = testing::all_logits(**gen, r.input_ids);
      ASSERT_EQ(logits.size(), r.input_ids.size() * nv);
      for (size_t p = 0; p < r.input_ids.size(); ++p) {
        const std::span<const float> row(&logits[p * nv], nv);
        EXPECT_EQ(argmax(row), r.argmax_per_position[p]) << "position " << p;
        double sum = 0;
        for (float v : row) sum += v;
        EXPECT_NEAR(sum, r.logits_rows_sum[p], 1e-3 * std::max(1.0, std::fabs(r.logits_rows_sum[p])))
            << "position " << p;
      }
      const float* last = &logits[(r.input_ids.size() - 1) * nv];
      for (size_t i = 0; i < nv; ++i) ASSERT_NEAR(last[i], r.last_logits[i], 1e-3) << "logit " << i;
      EXPECT_EQ(testing::greedy(**gen, r.input_ids, 24), r.greedy_continuation);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfFixture,
                         ::testing::Values("llama_gqa", "llama3_rope_scaling", "mistral", "qwen2_bias", "qwen3_qknorm",
                                           "phi3_fused"));

TEST(HfFixtureBf16, GreedyAgreesWithF32ReferenceForEightTokens) {
  TESSERA_REQUIRE_SHARED_FILE(ref_path, "fixtures/hf/llama_gqa/reference.json");
  auto model = Model::load(testing::shared_path("fixtures/hf/llama_gqa_bf16"));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->weights().layers[0].wq.dtype, DType::kBF16);
  auto gen = testing::make_engine(**model, testing::cpu_backend(2), 0, 256);
  ASSERT_TRUE(gen.ok());
  for (const testing::HfReference& r : testing::load_hf_reference(ref_path)) {
    const auto got = testing::greedy(**gen, r.input_ids, 8);
    EXPECT_EQ(got, std::vector<int32_t>(r.greedy_continuation.begin(), r.greedy_continuation.begin() + 8));
  }
}

// What rounding the activations to bf16 costs (AVX512-BF16's tile_bf16_dp,
// every matrix but the output head): every position's logits on the best ISA
// against the scalar table's f32-activation product of the same bf16
// weights. Measured on a Zen 5 class EPYC: max |Δlogit| 1.3e-2 over the
// three references, logits up to 2.6 in magnitude (the AVX2 table, f32
// activations, differs from scalar by 1.4e-6); docs/quantization.md.
TEST(HfFixtureBf16, Bf16ActivationsMoveLogitsLittle) {
  TESSERA_REQUIRE_SHARED_FILE(ref_path, "fixtures/hf/llama_gqa/reference.json");
  auto model = Model::load(testing::shared_path("fixtures/hf/llama_gqa_bf16"));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto exact = testing::make_engine(**model, testing::cpu_backend(2, Isa::kScalar), 0, 256, KvDtype::kF32);
  auto best = testing::make_engine(**model, testing::cpu_backend(2, best_isa()), 0, 256, KvDtype::kF32);
  ASSERT_TRUE(exact.ok() && best.ok());
  for (const testing::HfReference& r : testing::load_hf_reference(ref_path)) {
    const auto want = testing::all_logits(**exact, r.input_ids);
    const auto got = testing::all_logits(**best, r.input_ids);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 3e-2) << "logit " << i;
  }
}

}  // namespace
}  // namespace tessera
