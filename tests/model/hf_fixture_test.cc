// Hugging Face reference fixtures: tiny random-weight models saved by
// transformers, with logits and greedy continuations computed by transformers
// in float32 (../shared/fixtures/hf/<name>/reference.json).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "backend/cpu/gemm.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/weight_layout.h"
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

// BF16 weights through int16 panels (BackendOptions::f16_matmul kAuto on the
// tables with tile_i16 and without tile_bf16_dp: AVX2, and AVX-512 without
// AVX512-BF16): each weight quantized per 64-column group at load, the
// activations per product (gemm_i16_ref.h). On every such ISA this CPU
// runs: every position's logits within 5e-3 of the exact path's
// (`--f16-matmul f16`: bf16 weights widened to f32, f32 FMAs; logits up to
// ~2.6 in magnitude; measured 3.2e-3 on Zen 4, docs/quantization.md round
// 20), and all 24 greedy tokens of each prompt equal to the exact path's.
// The backend line names the path exactly when it was taken, and the
// roofline's bytes (matrix_read_bytes) add the scales: an f32 per 64
// columns of every matrix that took it.
TEST(HfFixtureBf16, Int16PanelsStayNearTheExactPath) {
  TESSERA_REQUIRE_SHARED_FILE(ref_path, "fixtures/hf/llama_gqa/reference.json");
  auto model = Model::load(testing::shared_path("fixtures/hf/llama_gqa_bf16"));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const auto references = testing::load_hf_reference(ref_path);
  int tested = 0;
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_name(isa));
    const cpu::GemmKernels* g = cpu::kernels_for(isa).gemm;
    const bool as_int16 = g != nullptr && g->tile_bf16_dp == nullptr && g->tile_i16 != nullptr;
    BackendOptions exact_options = testing::cpu_backend(2, isa);
    exact_options.f16_matmul = F16Matmul::kF16;
    auto exact = testing::make_engine(**model, exact_options, 0, 256, KvDtype::kF32);
    auto fast = testing::make_engine(**model, testing::cpu_backend(2, isa), 0, 256, KvDtype::kF32);
    ASSERT_TRUE(exact.ok() && fast.ok());
    const std::string describe = (*fast)->backend().describe();
    EXPECT_EQ(describe.find("bf16 weights as int16") != std::string::npos, as_int16) << describe;
    EXPECT_EQ((*exact)->backend().describe().find("weights as"), std::string::npos) << (*exact)->backend().describe();
    uint64_t scale_bytes = 0;
    if (as_int16) {
      for (const LayerWeights& l : (*model)->weights().layers) {
        for (const WeightView* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
          if (cpu::fits_i16_panels(w->rows, w->cols, g->i16_panel_rows)) {
            scale_bytes += static_cast<uint64_t>(w->rows) * static_cast<uint64_t>(w->cols / 64) * 4;
          }
        }
      }
      EXPECT_GT(scale_bytes, 0u);
    }
    const uint64_t file_bytes = (*model)->weights().matrix_bytes();
    EXPECT_EQ((*exact)->executor().matrix_read_bytes(), file_bytes);
    EXPECT_EQ((*fast)->executor().matrix_read_bytes(), file_bytes + scale_bytes);
    if (!as_int16) continue;
    ++tested;
    double max_diff = 0, ref_exact = 0, ref_fast = 0;  // ref_*: last position against transformers' f32
    std::string agrees;
    for (const testing::HfReference& r : references) {
      const auto want = testing::all_logits(**exact, r.input_ids);
      const auto got = testing::all_logits(**fast, r.input_ids);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[i] - want[i])));
      }
      const size_t last = got.size() - r.last_logits.size();
      for (size_t i = 0; i < r.last_logits.size(); ++i) {
        ref_exact = std::max(ref_exact, std::fabs(static_cast<double>(want[last + i]) - r.last_logits[i]));
        ref_fast = std::max(ref_fast, std::fabs(static_cast<double>(got[last + i]) - r.last_logits[i]));
      }
      const auto tokens = testing::greedy(**fast, r.input_ids, 24);
      EXPECT_EQ(tokens, testing::greedy(**exact, r.input_ids, 24));
      size_t agree = 0;  // with transformers' f32 continuation, for the record
      while (agree < tokens.size() && agree < r.greedy_continuation.size() &&
             tokens[agree] == r.greedy_continuation[agree]) {
        ++agree;
      }
      agrees.push_back(' ');
      agrees.append(std::to_string(agree));
    }
    std::printf(
        "%s, bf16 weights as int16: max |logit - exact bf16 path| = %.3g; last position against transformers' f32: "
        "exact bf16 %.3g, int16 %.3g; greedy tokens equal to transformers' (of 24):%s\n",
        isa_name(isa), max_diff, ref_exact, ref_fast, agrees.c_str());
    EXPECT_LE(max_diff, 5e-3);
  }
  if (tested == 0) GTEST_SKIP() << "no ISA of this CPU takes BF16 as int16 panels";
}

}  // namespace
}  // namespace tessera
