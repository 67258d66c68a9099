// convert_hf_to_gguf on the Hugging Face reference fixtures
// (../shared/fixtures/hf/<name>/): the converted GGUF must reproduce
// transformers' logits and greedy continuations exactly as the HF directory
// does (tests/model/hf_fixture_test.cc), store Llama q/k rows in llama.cpp's
// permuted order, stay close under f16 / q8_0, and carry a tokenizer.json
// over so that it encodes identically.
#include "model/convert_hf.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/cpu/gemm.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/weight_layout.h"
#include "core/cpu_features.h"
#include "core/quant_ref.h"
#include "formats/gguf_reader.h"
#include "formats/safetensors.h"
#include "hf_reference.h"
#include "kv/block_table.h"
#include "model_test_util.h"
#include "sample/sampler.h"
#include "test_support.h"
#include "tokenizer/byte_unicode.h"

namespace tessera {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A per-test temporary directory, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("tessera_convert_") + info->name() + "_" + std::to_string(::getpid());
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    path_ = fs::temp_directory_path() / name;
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

std::unique_ptr<Model> convert_and_load(const std::string& hf_dir, const std::string& out, DType dtype,
                                        ConvertSummary* summary = nullptr) {
  auto s = convert_hf_to_gguf(hf_dir, out, ConvertOptions{dtype});
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return nullptr;
  if (summary != nullptr) *summary = *s;
  auto m = Model::load(out);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(m).value() : nullptr;
}

class ConvertFixture : public ::testing::TestWithParam<std::string> {};

// f32 conversion is exact: the GGUF model gives transformers' logits
// (|diff| <= 1e-3, as the HF directory itself) and greedy continuation.
TEST_P(ConvertFixture, F32GgufMatchesTransformersReference) {
  const std::string ref_name = GetParam() == "llama_gqa_bf16" ? "llama_gqa" : GetParam();
  TESSERA_REQUIRE_SHARED_FILE(ref_path, "fixtures/hf/" + ref_name + "/reference.json");
  TempDir tmp;
  auto model = convert_and_load(testing::shared_path("fixtures/hf/" + GetParam()), tmp.file("m.gguf"), DType::kF32);
  ASSERT_NE(model, nullptr);
  ASSERT_NE(model->gguf(), nullptr);
  EXPECT_FALSE(model->has_tokenizer());  // the fixtures have no tokenizer.json
  const auto nv = static_cast<size_t>(model->config().n_vocab);
  auto gen = testing::make_engine(*model, testing::cpu_backend(2), 0, 256, KvDtype::kF32);
  ASSERT_TRUE(gen.ok());
  const bool bf16 = GetParam() == "llama_gqa_bf16";
  for (const testing::HfReference& r : testing::load_hf_reference(ref_path)) {
    if (bf16) {  // bf16 weights: as hf_fixture_test, the first 8 greedy tokens agree with the f32 reference
      EXPECT_EQ(testing::greedy(**gen, r.input_ids, 8),
                std::vector<int32_t>(r.greedy_continuation.begin(), r.greedy_continuation.begin() + 8));
      continue;
    }
    const auto logits = testing::all_logits(**gen, r.input_ids);
    ASSERT_EQ(logits.size(), r.input_ids.size() * nv);
    for (size_t p = 0; p < r.input_ids.size(); ++p) {
      EXPECT_EQ(argmax(std::span<const float>(&logits[p * nv], nv)), r.argmax_per_position[p]) << "position " << p;
    }
    const float* last = &logits[(r.input_ids.size() - 1) * nv];
    for (size_t i = 0; i < nv; ++i) ASSERT_NEAR(last[i], r.last_logits[i], 1e-3) << "logit " << i;
    EXPECT_EQ(testing::greedy(**gen, r.input_ids, 24), r.greedy_continuation);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ConvertFixture,
                         ::testing::Values("llama_gqa", "llama3_rope_scaling", "mistral", "qwen2_bias", "qwen3_qknorm",
                                           "phi3_fused", "llama_gqa_bf16"));

// f16 and q8_0 conversions. Tolerance: the argmax of the first 4 prompt
// positions equals transformers' (these tiny random models have logit
// margins far above the ~1e-3 (f16) / ~1e-2 (q8_0) relative weight error;
// later positions and long greedy runs may flip near-ties). The q8_0 file
// keeps rows whose length is not a multiple of 32 (n_ff = 176) in f16.
TEST(ConvertHf, F16AndQ8ArgmaxOfFirstPositions) {
  TESSERA_REQUIRE_SHARED_FILE(ref_path, "fixtures/hf/llama_gqa/reference.json");
  for (DType dtype : {DType::kF16, DType::kQ8_0}) {
    SCOPED_TRACE(dtype_name(dtype));
    TempDir tmp;
    ConvertSummary summary;
    auto model = convert_and_load(testing::shared_path("fixtures/hf/llama_gqa"), tmp.file("m.gguf"), dtype, &summary);
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(model->weights().layers[0].wq.dtype, dtype);
    EXPECT_EQ(model->gguf()->find_tensor("blk.0.attn_norm.weight")->dtype, DType::kF32);
    if (dtype == DType::kQ8_0) {
      EXPECT_EQ(model->weights().layers[0].w_down.dtype, DType::kF16);  // 176 columns
      EXPECT_FALSE(summary.notes.empty());
    }
    EXPECT_EQ(model->gguf()->get_int("general.file_type").value(), static_cast<int64_t>(gguf_file_type(dtype)));
    const auto nv = static_cast<size_t>(model->config().n_vocab);
    auto gen = testing::make_engine(*model, testing::cpu_backend(2), 0, 256, KvDtype::kF32);
    ASSERT_TRUE(gen.ok());
    for (const testing::HfReference& r : testing::load_hf_reference(ref_path)) {
      const auto logits = testing::all_logits(**gen, r.input_ids);
      for (size_t p = 0; p < std::min<size_t>(4, r.input_ids.size()); ++p) {
        EXPECT_EQ(argmax(std::span<const float>(&logits[p * nv], nv)), r.argmax_per_position[p]) << "position " << p;
      }
    }
  }
}

// F16 weights through the kernel table's inexact path
// (BackendOptions::f16_matmul kAuto), on every ISA this CPU runs:
// - AVX512-BF16: each weight rounded to bf16 at load, activations to bf16
//   per product. As for the bf16 checkpoint (hf_fixture_test), the first 8
//   greedy tokens equal transformers' float32 continuation (measured on
//   Zen 4: 24, 24 and 11 of 24 for the three prompts), and every position's
//   logits stay within 3e-2 of the exact f16 path's (logits up to ~2.6 in
//   magnitude; measured 2.3e-2: docs/quantization.md round 14).
// - AVX2, or AVX-512 without AVX512-BF16 (tile_i16; the same bits on every
//   table): weights quantized to int16 per 64-column group at load,
//   activations per product (gemm_i16_ref.h). All 24 greedy tokens of each
//   prompt equal transformers', and the logits stay within 5e-3 of the exact
//   path's (measured 3.3e-3, against bf16's 2.3e-2: docs/quantization.md
//   round 18).
// - Elsewhere (scalar, tables without either tile) kAuto is the exact path:
//   equal bits.
// The output head stays f16 with f32 activations; the exact f16 path gives
// all 24 tokens (checked too).
TEST(ConvertHf, F16InexactPathsKeepGreedyGoldens) {
  TESSERA_REQUIRE_SHARED_FILE(ref_path, "fixtures/hf/llama_gqa/reference.json");
  TempDir tmp;
  auto model = convert_and_load(testing::shared_path("fixtures/hf/llama_gqa"), tmp.file("m.gguf"), DType::kF16);
  ASSERT_NE(model, nullptr);
  ASSERT_EQ(model->weights().layers[0].wq.dtype, DType::kF16);
  const auto references = testing::load_hf_reference(ref_path);
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_name(isa));
    const cpu::GemmKernels* g = cpu::kernels_for(isa).gemm;
    const bool as_bf16 = g != nullptr && g->tile_bf16_dp != nullptr;
    const bool as_int16 = !as_bf16 && g != nullptr && g->tile_i16 != nullptr;
    BackendOptions exact_options = testing::cpu_backend(2, isa);
    exact_options.f16_matmul = F16Matmul::kF16;
    auto exact = testing::make_engine(*model, exact_options, 0, 256, KvDtype::kF32);
    auto fast = testing::make_engine(*model, testing::cpu_backend(2, isa), 0, 256, KvDtype::kF32);
    ASSERT_TRUE(exact.ok() && fast.ok());
    double max_diff = 0, max_ref_diff_exact = 0, max_ref_diff_fast = 0;
    size_t least_agree = SIZE_MAX;
    for (const testing::HfReference& r : references) {
      const auto want = testing::all_logits(**exact, r.input_ids);
      const auto got = testing::all_logits(**fast, r.input_ids);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        if (!as_bf16 && !as_int16) {
          ASSERT_EQ(got[i], want[i]) << "logit " << i;
        }
        max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[i] - want[i])));
      }
      const size_t last = got.size() - r.last_logits.size();
      for (size_t i = 0; i < r.last_logits.size(); ++i) {
        max_ref_diff_exact =
            std::max(max_ref_diff_exact, std::fabs(static_cast<double>(want[last + i]) - r.last_logits[i]));
        max_ref_diff_fast =
            std::max(max_ref_diff_fast, std::fabs(static_cast<double>(got[last + i]) - r.last_logits[i]));
      }
      const auto tokens = testing::greedy(**fast, r.input_ids, 24);
      ASSERT_EQ(tokens.size(), r.greedy_continuation.size());
      size_t agree = 0;
      while (agree < tokens.size() && tokens[agree] == r.greedy_continuation[agree]) ++agree;
      least_agree = std::min(least_agree, agree);
      EXPECT_GE(agree, as_bf16 ? 8u : tokens.size());
      EXPECT_EQ(testing::greedy(**exact, r.input_ids, 24), r.greedy_continuation);
    }
    const char* path = as_bf16 ? "as bf16" : as_int16 ? "as int16" : "exact";
    std::printf(
        "%s, f16 weights %s: max |logit - exact f16 path| = %.3g; last position against transformers' f32: exact "
        "f16 %.3g, this path %.3g; greedy: at least the first %zu of 24 tokens equal transformers'\n",
        isa_name(isa), path, max_diff, max_ref_diff_exact, max_ref_diff_fast, least_agree);
    EXPECT_LE(max_diff, as_bf16 ? 3e-2 : 5e-3);
    // The backend line says so exactly when F16 matrices took the inexact path.
    const std::string describe = (*fast)->backend().describe();
    EXPECT_EQ(describe.find("f16 weights as bf16") != std::string::npos, as_bf16) << describe;
    EXPECT_EQ(describe.find("f16 weights as int16") != std::string::npos, as_int16) << describe;
    EXPECT_EQ((*exact)->backend().describe().find("f16 weights as"), std::string::npos)
        << (*exact)->backend().describe();
    // What a decode step reads (ModelInfo::weight_bytes, the bench roofline):
    // the file's bytes on the exact and bf16 paths, plus an f32 scale per 64
    // columns of each int16 matrix (every layer projection whose rows fill
    // whole panels; the output head keeps f16).
    uint64_t scale_bytes = 0;
    if (as_int16) {
      for (const LayerWeights& l : model->weights().layers) {
        for (const WeightView* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
          if (cpu::fits_i16_panels(w->rows, w->cols, g->i16_panel_rows)) {
            scale_bytes += static_cast<uint64_t>(w->rows) * static_cast<uint64_t>(w->cols / 64) * 4;
          }
        }
      }
      EXPECT_GT(scale_bytes, 0u);
    }
    const uint64_t file_bytes = model->weights().matrix_bytes();
    EXPECT_EQ((*exact)->executor().matrix_read_bytes(), file_bytes);
    EXPECT_EQ((*fast)->executor().matrix_read_bytes(), file_bytes + scale_bytes);
  }
}

// A model without F16 matrices never has its backend line claim the rounding,
// whatever --f16-matmul says (it was printed for every model on AVX512-BF16).
TEST(ConvertHf, BackendLineNamesF16RoundingOnlyForF16Models) {
  TESSERA_REQUIRE_SHARED_FILE(ref_path, "fixtures/hf/llama_gqa/reference.json");
  TempDir tmp;
  auto model = convert_and_load(testing::shared_path("fixtures/hf/llama_gqa"), tmp.file("m.gguf"), DType::kF32);
  ASSERT_NE(model, nullptr);
  auto engine = testing::make_engine(*model, testing::cpu_backend(2), 0, 256, KvDtype::kF32);
  ASSERT_TRUE(engine.ok());
  EXPECT_EQ((*engine)->backend().describe().find("f16 weights as bf16"), std::string::npos)
      << (*engine)->backend().describe();
}

// GGUF row r of a Llama attn_q / attn_k holds HF row llama_rope_row(r): per
// head, [2, head_dim / 2] -> [head_dim / 2, 2]. Qwen2 rows stay in place.
TEST(ConvertHf, LlamaQkRowsArePermutedPerHead) {
  EXPECT_EQ(llama_rope_row(0, 8), 0);
  EXPECT_EQ(llama_rope_row(1, 8), 4);
  EXPECT_EQ(llama_rope_row(2, 8), 1);
  EXPECT_EQ(llama_rope_row(7, 8), 7);
  EXPECT_EQ(llama_rope_row(9, 8), 12);
  for (const char* name : {"llama_gqa", "qwen2_bias"}) {
    SCOPED_TRACE(name);
    const std::string dir = testing::shared_path(std::string("fixtures/hf/") + name);
    TESSERA_REQUIRE_SHARED_FILE(cfg_path, std::string("fixtures/hf/") + name + "/config.json");
    TempDir tmp;
    ASSERT_TRUE(convert_hf_to_gguf(dir, tmp.file("m.gguf"), ConvertOptions{DType::kF32}).ok());
    auto gguf = GgufFile::open(tmp.file("m.gguf"));
    ASSERT_TRUE(gguf.ok());
    auto ckpt = SafetensorsCheckpoint::open_dir(dir);
    ASSERT_TRUE(ckpt.ok());
    const bool permuted = std::string(name) == "llama_gqa";
    std::ifstream in(cfg_path);
    const json cfg = json::parse(in);
    const int64_t n_embd = cfg.at("hidden_size").get<int64_t>();
    const int64_t head_dim = cfg.contains("head_dim") ? cfg.at("head_dim").get<int64_t>()
                                                      : n_embd / cfg.at("num_attention_heads").get<int64_t>();
    for (const char* proj : {"q", "k"}) {
      const GgufTensorInfo* g = gguf->find_tensor(std::string("blk.1.attn_") + proj + ".weight");
      const SafetensorsTensor* h = ckpt->find(std::string("model.layers.1.self_attn.") + proj + "_proj.weight");
      ASSERT_NE(g, nullptr);
      ASSERT_NE(h, nullptr);
      ASSERT_EQ(g->shape, (std::vector<int64_t>{h->shape[1], h->shape[0]}));
      const int64_t rows = h->shape[0];
      std::vector<float> hf_row(static_cast<size_t>(n_embd));
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t from = permuted ? llama_rope_row(r, head_dim) : r;
        dequantize_row(h->dtype, h->data + static_cast<size_t>(from) * dtype_row_bytes(h->dtype, n_embd), hf_row.data(),
                       n_embd);
        ASSERT_EQ(std::memcmp(g->data + static_cast<size_t>(r * n_embd) * sizeof(float), hf_row.data(),
                              hf_row.size() * sizeof(float)),
                  0)
            << proj << " row " << r;
      }
    }
  }
}

TEST(ConvertHf, WritesStandardMetadata) {
  TESSERA_REQUIRE_SHARED_FILE(cfg, "fixtures/hf/llama3_rope_scaling/config.json");
  TempDir tmp;
  const std::string dir = testing::shared_path("fixtures/hf/llama3_rope_scaling");
  ASSERT_TRUE(convert_hf_to_gguf(dir, tmp.file("m.gguf"), ConvertOptions{DType::kF32}).ok());
  auto g = GgufFile::open(tmp.file("m.gguf"));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->get_string("general.architecture").value(), "llama");
  EXPECT_EQ(g->get_int("llama.block_count").value(), 2);
  EXPECT_EQ(g->get_int("llama.embedding_length").value(), 64);
  EXPECT_EQ(g->get_int("llama.attention.head_count").value(), 8);
  EXPECT_EQ(g->get_int("llama.attention.head_count_kv").value(), 4);
  EXPECT_EQ(g->get_int("llama.rope.dimension_count").value(), 8);
  EXPECT_EQ(g->get_int("llama.context_length").value(), 512);
  EXPECT_EQ(g->find("llama.rope.scaling.type"), nullptr);  // llama.cpp knows no "llama3" type
  const GgufTensorInfo* freqs = g->find_tensor("rope_freqs.weight");
  ASSERT_NE(freqs, nullptr);
  EXPECT_EQ(freqs->shape, std::vector<int64_t>{4});
  // The GGUF config's frequencies equal the HF config's.
  auto gguf_model = Model::load(tmp.file("m.gguf"));
  auto hf_model = Model::load(dir);
  ASSERT_TRUE(gguf_model.ok() && hf_model.ok());
  const auto a = (*gguf_model)->config().rope_inv_freq();
  const auto b = (*hf_model)->config().rope_inv_freq();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6f * b[i]) << i;
  EXPECT_NE(g->find_tensor("output.weight"), nullptr);  // tie_word_embeddings is false
}

// A tiny byte-level BPE tokenizer.json: the 256 byte-level characters, a few
// merges and an end-of-text control token.
std::string tiny_byte_level_tokenizer_json() {
  json vocab = json::object();
  int next = 0;
  for (int b = 0; b < 256; ++b) vocab[std::string(byte_unicode::byte_to_utf8(static_cast<uint8_t>(b)))] = next++;
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"\u0120", "t"}, {"h", "e"},        {"\u0120t", "he"},   {"i", "n"}, {"\u0120", "w"}, {"o", "r"},
      {"l", "d"},      {"\u0120w", "or"}, {"\u0120wor", "ld"}, {"e", "r"}, {"\u0120", "a"}, {"in", "g"}};
  json merge_list = json::array();
  for (const auto& [l, r] : merges) {
    if (!vocab.contains(l + r)) vocab[l + r] = next++;
    merge_list.push_back(l + " " + r);
  }
  const int eot = next++;
  json j = {
      {"version", "1.0"},
      {"added_tokens", json::array({{{"id", eot}, {"content", "<|endoftext|>"}, {"special", true}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"vocab", vocab},
        {"merges", merge_list}}},
  };
  return j.dump();
}

TEST(ConvertHf, ByteLevelTokenizerRoundTrips) {
  TESSERA_REQUIRE_SHARED_FILE(cfg, "fixtures/hf/llama_gqa/config.json");
  TempDir tmp;
  const fs::path hf = tmp.file("hf");
  fs::create_directories(hf);
  const fs::path src = testing::shared_path("fixtures/hf/llama_gqa");
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"}) fs::copy_file(src / f, hf / f);
  std::ofstream(hf / "tokenizer.json") << tiny_byte_level_tokenizer_json();
  std::ofstream(hf / "tokenizer_config.json")
      << R"({"eos_token": "<|endoftext|>", "add_bos_token": false, "chat_template": "{{ messages }}"})";
  auto hf_model = Model::load(hf.string());
  ASSERT_TRUE(hf_model.ok()) << hf_model.status().to_string();
  ASSERT_TRUE((*hf_model)->has_tokenizer());

  ConvertSummary summary;
  auto model = convert_and_load(hf.string(), tmp.file("m.gguf"), DType::kF32, &summary);
  ASSERT_NE(model, nullptr);
  EXPECT_TRUE(summary.wrote_tokenizer);
  ASSERT_TRUE(model->has_tokenizer());
  const GgufFile& g = *model->gguf();
  EXPECT_EQ(g.get_string("tokenizer.ggml.model").value(), "gpt2");
  EXPECT_EQ(g.get_string("tokenizer.ggml.pre").value(), "default");
  EXPECT_EQ(g.get_string_array("tokenizer.ggml.tokens")->size(), 512u);  // padded to the embedding
  EXPECT_EQ(g.get_string_array("tokenizer.ggml.merges")->size(), 12u);
  EXPECT_EQ(g.get_string("tokenizer.chat_template").value(), "{{ messages }}");
  const Tokenizer& a = (*hf_model)->tokenizer();
  const Tokenizer& b = model->tokenizer();
  EXPECT_EQ(b.eos_id(), a.eos_id());
  EXPECT_EQ(b.add_bos(), a.add_bos());
  for (const char* text :
       {"the world is turning", " the  weather\n\nwording 123!", "naïve 日本 <|endoftext|> the", "I'm ringing"}) {
    EXPECT_EQ(b.encode(text, true, true), a.encode(text, true, true)) << text;
    EXPECT_EQ(b.decode(b.encode(text, false)), text);
  }
  EXPECT_EQ(b.encode(" the world", false), a.encode(" the world", false));
  EXPECT_LT(b.encode(" the world", false).size(), 3u);  // merged: " the", " world"
}

TEST(ConvertHf, RejectsUnsupportedDtypeAndMissingDir) {
  TempDir tmp;
  EXPECT_EQ(convert_hf_to_gguf(tmp.file("nope"), tmp.file("m.gguf"), ConvertOptions{DType::kF32}).status().code(),
            StatusCode::kNotFound);
  TESSERA_REQUIRE_SHARED_FILE(cfg, "fixtures/hf/llama_gqa/config.json");
  EXPECT_EQ(convert_hf_to_gguf(testing::shared_path("fixtures/hf/llama_gqa"), tmp.file("m.gguf"),
                               ConvertOptions{DType::kQ4_0})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
