// tessera quantize's logic (model/quantize_model.h): scheme names and
// per-tensor types, fallbacks, metadata copying, the written file loading
// and running, and load-time quantization.
#include "model/quantize_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "formats/gguf_reader.h"
#include "model/random_model.h"
#include "model_test_util.h"
#include "test_support.h"

namespace tessera {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("tessera_quant_" + name + "_" + std::to_string(::getpid()) + ".gguf"))
      .string();
}

RandomModelShape k_shape() {
  RandomModelShape s;
  s.name = "kq";
  s.n_vocab = 512;
  s.n_embd = 256;
  s.n_layers = 8;
  s.n_ff = 512;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  return s;
}

TEST(QuantScheme, NamesAndMixTypes) {
  EXPECT_FALSE(quant_scheme_from_name("q8_k").has_value());
  EXPECT_FALSE(quant_scheme_from_name("q2_k_m").has_value());
  EXPECT_FALSE(quant_scheme_from_name("q6_k_m").has_value());
  const auto m = quant_scheme_from_name("Q4_K_M");
  ASSERT_TRUE(m.has_value());
  auto type = [](const QuantScheme& s, std::string_view name, int n_layers = 8) {
    return quant_scheme_tensor_type(s, name, n_layers, true);
  };
  EXPECT_EQ(type(*m, "output.weight"), DType::kQ6_K);
  EXPECT_EQ(type(*m, "token_embd.weight"), DType::kQ4_K);
  EXPECT_EQ(type(*m, "blk.0.attn_v.weight"), DType::kQ6_K);  // first eighth
  EXPECT_EQ(type(*m, "blk.1.attn_v.weight"), DType::kQ4_K);
  EXPECT_EQ(type(*m, "blk.3.ffn_down.weight"), DType::kQ6_K);  // (3 - 1) % 3 == 2
  EXPECT_EQ(type(*m, "blk.7.ffn_down.weight"), DType::kQ6_K);  // last eighth
  EXPECT_EQ(type(*m, "blk.3.attn_q.weight"), DType::kQ4_K);
  EXPECT_EQ(type(*m, "blk.3.attn_qkv.weight"), DType::kQ5_K);  // fused (Phi-3)
  EXPECT_EQ(quant_scheme_file_type(*m), 15u);
  // A tied output: the embedding is the output matrix and takes its type.
  EXPECT_EQ(quant_scheme_tensor_type(*m, "token_embd.weight", 8, false), DType::kQ6_K);
  EXPECT_EQ(quant_scheme_tensor_type(*quant_scheme_from_name("q4_k"), "token_embd.weight", 8, false), DType::kQ4_K);

  // Q3_K_M over 32 layers (n / 16 = 2): attn_v Q5_K in layers 0-1, else
  // Q4_K; ffn_down Q5_K in layers 0-1, else Q4_K; attn_output Q4_K.
  const auto q3m = quant_scheme_from_name("q3_k_m");
  ASSERT_TRUE(q3m.has_value());
  EXPECT_EQ(q3m->base, DType::kQ3_K);
  EXPECT_EQ(type(*q3m, "output.weight", 32), DType::kQ6_K);
  EXPECT_EQ(type(*q3m, "token_embd.weight", 32), DType::kQ3_K);
  EXPECT_EQ(type(*q3m, "blk.1.attn_v.weight", 32), DType::kQ5_K);
  EXPECT_EQ(type(*q3m, "blk.2.attn_v.weight", 32), DType::kQ4_K);
  EXPECT_EQ(type(*q3m, "blk.1.ffn_down.weight", 32), DType::kQ5_K);
  EXPECT_EQ(type(*q3m, "blk.2.ffn_down.weight", 32), DType::kQ4_K);
  EXPECT_EQ(type(*q3m, "blk.31.ffn_down.weight", 32), DType::kQ4_K);
  EXPECT_EQ(type(*q3m, "blk.9.attn_output.weight", 32), DType::kQ4_K);
  EXPECT_EQ(type(*q3m, "blk.9.attn_q.weight", 32), DType::kQ3_K);
  EXPECT_EQ(type(*q3m, "blk.9.ffn_up.weight", 32), DType::kQ3_K);
  EXPECT_EQ(type(*q3m, "blk.9.ffn_gate.weight", 32), DType::kQ3_K);
  // Under 16 layers n / 16 = 0: no ffn_down is Q5_K.
  EXPECT_EQ(type(*q3m, "blk.0.ffn_down.weight", 8), DType::kQ4_K);
  EXPECT_EQ(quant_scheme_file_type(*q3m), 12u);

  const auto q3l = quant_scheme_from_name("q3_k_l");
  ASSERT_TRUE(q3l.has_value());
  for (const char* n : {"blk.5.attn_v.weight", "blk.5.ffn_down.weight", "blk.5.attn_output.weight"}) {
    EXPECT_EQ(type(*q3l, n), DType::kQ5_K) << n;
  }
  EXPECT_EQ(type(*q3l, "blk.5.attn_k.weight"), DType::kQ3_K);
  EXPECT_EQ(type(*q3l, "blk.5.attn_qkv.weight"), DType::kQ4_K);
  EXPECT_EQ(quant_scheme_file_type(*q3l), 13u);

  // Q3_K_S and Q5_K_S: only the output differs from the pure type.
  for (const char* n : {"q3_k_s", "q5_k_s"}) {
    const auto s = quant_scheme_from_name(n);
    ASSERT_TRUE(s.has_value()) << n;
    EXPECT_EQ(type(*s, "output.weight"), DType::kQ6_K) << n;
    for (const char* t : {"blk.0.attn_v.weight", "blk.0.ffn_down.weight", "blk.0.attn_output.weight"}) {
      EXPECT_EQ(type(*s, t), s->base) << n << " " << t;
    }
  }
  EXPECT_EQ(quant_scheme_file_type(*quant_scheme_from_name("q3_k_s")), 11u);
  EXPECT_EQ(quant_scheme_file_type(*quant_scheme_from_name("q5_k_s")), 16u);

  // Q4_K_S over 32 layers: attn_v Q5_K in layers 0-3, ffn_down in 0-3 (n / 8).
  const auto q4s = quant_scheme_from_name("q4_k_s");
  ASSERT_TRUE(q4s.has_value());
  EXPECT_EQ(type(*q4s, "blk.3.attn_v.weight", 32), DType::kQ5_K);
  EXPECT_EQ(type(*q4s, "blk.4.attn_v.weight", 32), DType::kQ4_K);
  EXPECT_EQ(type(*q4s, "blk.3.ffn_down.weight", 32), DType::kQ5_K);
  EXPECT_EQ(type(*q4s, "blk.4.ffn_down.weight", 32), DType::kQ4_K);
  EXPECT_EQ(type(*q4s, "output.weight", 32), DType::kQ6_K);
  EXPECT_EQ(quant_scheme_file_type(*q4s), 14u);

  EXPECT_EQ(type(*quant_scheme_from_name("q5_k_m"), "blk.0.attn_qkv.weight"), DType::kQ6_K);
  EXPECT_EQ(quant_scheme_file_type(*quant_scheme_from_name("q5_k_m")), 17u);
  EXPECT_EQ(quant_scheme_file_type(*quant_scheme_from_name("q8_0")), 7u);
  EXPECT_EQ(quant_scheme_file_type(*quant_scheme_from_name("q3_k")), 11u);
  // The pure types ignore the layer rules.
  EXPECT_EQ(type(*quant_scheme_from_name("q3_k"), "output.weight"), DType::kQ3_K);
}

TEST(QuantScheme, Fallbacks) {
  EXPECT_EQ(quant_fallback_type(DType::kQ4_K, 256), DType::kQ4_K);
  EXPECT_EQ(quant_fallback_type(DType::kQ4_K, 64), DType::kQ5_0);
  EXPECT_EQ(quant_fallback_type(DType::kQ5_K, 96), DType::kQ5_1);
  EXPECT_EQ(quant_fallback_type(DType::kQ6_K, 64), DType::kQ8_0);
  EXPECT_EQ(quant_fallback_type(DType::kQ2_K, 64), DType::kQ4_0);
  EXPECT_EQ(quant_fallback_type(DType::kQ6_K, 172), DType::kF16);
  EXPECT_EQ(quant_fallback_type(DType::kQ8_0, 172), DType::kF16);
}

// Quantizes a random f32 model to Q4_K_M, checks types, metadata and that
// the result runs with logits close to the f32 model's.
TEST(QuantizeModel, Q4_K_MFileLoadsAndRuns) {
  ThreadPool pool(2);
  const std::string in = temp_path("in"), out = temp_path("out");
  ASSERT_TRUE(write_random_model(k_shape(), DType::kF32, 3, pool, in).ok());
  int calls = 0;
  auto summary =
      quantize_model(in, out, *quant_scheme_from_name("q4_k_m"), pool, [&](int done, int total, const std::string&) {
        EXPECT_EQ(done, ++calls);
        EXPECT_GE(total, done);
      });
  ASSERT_TRUE(summary.ok()) << summary.status().to_string();
  EXPECT_EQ(calls, summary->n_tensors);
  EXPECT_TRUE(summary->notes.empty());
  EXPECT_LT(summary->bytes_out * 5, summary->bytes_in);  // ~4.8 bits vs 32
  {
    auto f = GgufFile::open(out);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(*f->get_int("general.file_type"), 15);
    EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens")->size(), 512u);  // metadata copied
    EXPECT_EQ(f->find_tensor("output.weight")->dtype, DType::kQ6_K);
    EXPECT_EQ(f->find_tensor("blk.0.attn_v.weight")->dtype, DType::kQ6_K);
    EXPECT_EQ(f->find_tensor("blk.1.attn_v.weight")->dtype, DType::kQ4_K);
    EXPECT_EQ(f->find_tensor("blk.1.attn_norm.weight")->dtype, DType::kF32);
  }
  auto base = Model::load(in);
  auto quant = Model::load(out);
  auto loadq = Model::load(in, LoadOptions{load_quant_scheme_from_name("q8_0")});
  auto load5 = Model::load(in, LoadOptions{load_quant_scheme_from_name("q5_k")});    // --quantize q5_k
  auto loadm = Model::load(in, LoadOptions{load_quant_scheme_from_name("q4_k_m")});  // --quantize q4_k_m
  ASSERT_TRUE(base.ok() && quant.ok() && loadq.ok() && load5.ok() && loadm.ok());
  {
    // Load-time q4_k_m quantizes each matrix from the same f32 rows to the
    // same type as the file: the same bytes, view by view.
    const ModelWeights& fw = (*quant)->weights();
    const ModelWeights& lw = (*loadm)->weights();
    auto same = [](const WeightView& a, const WeightView& b, const std::string& what) {
      ASSERT_EQ(a.dtype, b.dtype) << what;
      ASSERT_EQ(a.rows, b.rows) << what;
      const size_t n = static_cast<size_t>(a.rows) * dtype_row_bytes(a.dtype, a.cols);
      EXPECT_EQ(std::memcmp(a.data, b.data, n), 0) << what;
    };
    same(fw.output, lw.output, "output");
    EXPECT_EQ(lw.output.dtype, DType::kQ6_K);
    for (size_t l = 0; l < fw.layers.size(); ++l) {
      const LayerWeights &f = fw.layers[l], &w = lw.layers[l];
      same(f.wq, w.wq, "wq " + std::to_string(l));
      same(f.wk, w.wk, "wk " + std::to_string(l));
      same(f.wv, w.wv, "wv " + std::to_string(l));
      same(f.wo, w.wo, "wo " + std::to_string(l));
      same(f.w_gate, w.w_gate, "w_gate " + std::to_string(l));
      same(f.w_up, w.w_up, "w_up " + std::to_string(l));
      same(f.w_down, w.w_down, "w_down " + std::to_string(l));
    }
    EXPECT_EQ(lw.layers[0].wv.dtype, DType::kQ6_K);
    EXPECT_EQ(lw.layers[1].wv.dtype, DType::kQ4_K);
    EXPECT_EQ((*loadm)->quantized_matrices(), (*loadm)->quantize_candidates());
  }
  EXPECT_FALSE(load_quant_scheme_from_name("f16").has_value());
  EXPECT_FALSE(load_quant_scheme_from_name("q8_k").has_value());
  EXPECT_TRUE(load_quant_scheme_from_name("Q3_K_M").has_value());
  EXPECT_EQ((*loadq)->weights().layers[0].wq.dtype, DType::kQ8_0);
  EXPECT_EQ((*loadq)->weights().output.dtype, DType::kQ8_0);
  EXPECT_EQ((*load5)->weights().layers[0].w_down.dtype, DType::kQ5_K);
  EXPECT_EQ((*load5)->weights().output.dtype, DType::kQ5_K);
  const std::vector<int32_t> prompt = {1, 300, 301, 302, 303};
  auto logits = [&](const Model& m) {
    auto g = testing::make_engine(m, testing::cpu_backend(2), 0, 64, KvDtype::kF32);
    EXPECT_TRUE(g.ok());
    auto r = testing::last_logits(**g, prompt);
    return r;
  };
  const auto lb = logits(**base), lq = logits(**quant), l8 = logits(**loadq), l5 = logits(**load5);
  double err_q = 0, err_8 = 0, err_5 = 0, ref = 0;
  for (size_t i = 0; i < lb.size(); ++i) {
    ASSERT_TRUE(std::isfinite(lq[i]));
    err_q += (lq[i] - lb[i]) * static_cast<double>(lq[i] - lb[i]);
    err_8 += (l8[i] - lb[i]) * static_cast<double>(l8[i] - lb[i]);
    err_5 += (l5[i] - lb[i]) * static_cast<double>(l5[i] - lb[i]);
    ref += lb[i] * static_cast<double>(lb[i]);
  }
  std::printf("logits rms error / rms: q4_k_m file %.4f, load-time q5_k %.4f, load-time q8_0 %.4f\n",
              std::sqrt(err_q / ref), std::sqrt(err_5 / ref), std::sqrt(err_8 / ref));
  EXPECT_GT(err_q, 0.0);
  EXPECT_LT(std::sqrt(err_q / ref), 0.3);
  EXPECT_LT(err_5, err_q);  // q5_k is closer than q4_k_m
  EXPECT_LT(err_8, err_5);  // and q8_0 closer still
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}

// The Q3_K mixes written from one f32 model: each matrix has the type the
// mix table gives, the files load and run, and more bits give logits closer
// to the f32 model's: Q3_K_S (Q3_K + Q6_K output) > Q3_K_M > Q3_K_L.
TEST(QuantizeModel, Q3_KMixesTypesAndErrorOrder) {
  ThreadPool pool(2);
  const std::string in = temp_path("q3in");
  ASSERT_TRUE(write_random_model(k_shape(), DType::kF32, 5, pool, in).ok());
  auto base = Model::load(in);
  ASSERT_TRUE(base.ok());
  const std::vector<int32_t> prompt = {1, 300, 301, 302, 303, 40, 41};
  auto logits = [&](const Model& m) {
    auto g = testing::make_engine(m, testing::cpu_backend(2), 0, 64, KvDtype::kF32);
    EXPECT_TRUE(g.ok());
    return testing::last_logits(**g, prompt);
  };
  const std::vector<float> lb = logits(**base);
  std::vector<double> rel_err;
  for (const char* mix : {"q3_k_s", "q3_k_m", "q3_k_l"}) {
    const std::string out = temp_path(mix);
    const auto scheme = quant_scheme_from_name(mix);
    ASSERT_TRUE(scheme.has_value());
    auto summary = quantize_model(in, out, *scheme, pool);
    ASSERT_TRUE(summary.ok()) << summary.status().to_string();
    EXPECT_TRUE(summary->notes.empty());
    {
      auto f = GgufFile::open(out);
      ASSERT_TRUE(f.ok());
      EXPECT_EQ(*f->get_int("general.file_type"), static_cast<int64_t>(quant_scheme_file_type(*scheme)));
      for (const GgufTensorInfo& t : f->tensors()) {
        if (t.shape.size() < 2) continue;
        EXPECT_EQ(t.dtype, quant_scheme_tensor_type(*scheme, t.name, 8, true)) << mix << " " << t.name;
      }
      EXPECT_EQ(f->find_tensor("output.weight")->dtype, DType::kQ6_K);
      EXPECT_EQ(f->find_tensor("blk.4.attn_q.weight")->dtype, DType::kQ3_K);
    }
    auto m = Model::load(out);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    const std::vector<float> lq = logits(**m);
    double err = 0, ref = 0;
    for (size_t i = 0; i < lb.size(); ++i) {
      ASSERT_TRUE(std::isfinite(lq[i]));
      err += (lq[i] - lb[i]) * static_cast<double>(lq[i] - lb[i]);
      ref += lb[i] * static_cast<double>(lb[i]);
    }
    rel_err.push_back(std::sqrt(err / ref));
    std::filesystem::remove(out);
  }
  std::printf("logits rms error / rms: q3_k_s %.4f, q3_k_m %.4f, q3_k_l %.4f\n", rel_err[0], rel_err[1], rel_err[2]);
  EXPECT_LT(rel_err[0], 0.5);
  EXPECT_LT(rel_err[1], rel_err[0]);
  EXPECT_LT(rel_err[2], rel_err[1]);
  std::filesystem::remove(in);
}

TEST(QuantizeModel, FallbackNotes) {
  ThreadPool pool(1);
  RandomModelShape s = k_shape();
  s.n_embd = 64;  // rows of 64: no K-quant fits
  s.n_ff = 128;
  s.n_layers = 2;
  const std::string in = temp_path("fb_in"), out = temp_path("fb_out");
  ASSERT_TRUE(write_random_model(s, DType::kF16, 4, pool, in).ok());
  auto summary = quantize_model(in, out, *quant_scheme_from_name("q6_k"), pool);
  ASSERT_TRUE(summary.ok()) << summary.status().to_string();
  EXPECT_EQ(summary->notes.size(), static_cast<size_t>(summary->n_quantized));  // one line per matrix
  EXPECT_NE(summary->notes[0].find("using q8_0"), std::string::npos) << summary->notes[0];
  EXPECT_TRUE(Model::load(out).ok());
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace tessera
