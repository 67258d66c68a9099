// The public API (include/tessera/engine.h) as an embedding program sees it:
// errors for bad options, tokenize/detokenize, a cancelled request, metrics,
// generate(), the model and KV cache facts, Vocab, ChatFormatter and the
// model-file tools (the CLI and the server use nothing else).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "tessera/chat.h"
#include "tessera/engine.h"
#include "tessera/tools.h"
#include "tessera/vocab.h"
#include "test_support.h"

namespace tessera {
namespace {

TEST(PublicApi, BadOptionsAreOneLineErrors) {
  EngineOptions o;
  o.model = "/nonexistent/model.gguf";
  auto e = Engine::create(o);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("/nonexistent/model.gguf"), std::string::npos) << e.status().message();
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  o.model = path;
  o.kv_cache_dtype = "f12";
  EXPECT_EQ(Engine::create(o).status().code(), StatusCode::kInvalidArgument);
  o.kv_cache_dtype = "f16";
  o.backend.device = "tpu";
  EXPECT_EQ(Engine::create(o).status().code(), StatusCode::kInvalidArgument);
  o.backend.device = "cpu";
  o.quantize = "q3";
  const auto bad = Engine::create(o);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("expected one of q8_0, "), std::string::npos) << bad.status().message();
  // The load-time names: the tiled block types and the mixes, no float types.
  const std::vector<std::string> names = load_quantize_type_names();
  for (const char* n : {"q8_0", "q4_0", "q2_k", "q6_k", "q3_k_m", "q4_k_m", "q5_k_s"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
  for (const char* n : {"f16", "bf16", "f32", "q8_k"})
    EXPECT_EQ(std::find(names.begin(), names.end(), n), names.end()) << n;
}

TEST(PublicApi, TokenizeSubmitCancelMetrics) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  EngineOptions o;
  o.model = path;
  o.ctx_size = 256;
  auto engine = Engine::create(o);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  Engine& e = **engine;
  EXPECT_EQ(e.model_info().architecture, "llama");
  EXPECT_EQ(e.model_info().n_vocab, 512);
  EXPECT_EQ(e.model_info().context, 256);
  auto ids = e.tokenize("Once upon a time", true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(*e.detokenize({403, 407, 261, 378}), "Once upon a time");
  EXPECT_EQ(e.detokenize({9999}).status().code(), StatusCode::kInvalidArgument);

  GenerationOptions g;
  g.max_tokens = 200;
  g.ignore_eos = true;
  int tokens = 0;
  bool cancelled = false;
  uint64_t id = 0;
  auto r = e.submit(*ids, g, [&](const RequestEvent& ev) {
    if (ev.step.token >= 0 && ++tokens == 5) e.cancel(id);
    if (ev.request_finished) cancelled = ev.cancelled;
  });
  ASSERT_TRUE(r.ok());
  id = *r;
  e.run_until_idle();
  EXPECT_TRUE(cancelled);
  EXPECT_GE(tokens, 5);
  EXPECT_LT(tokens, 200);
  EXPECT_EQ(e.metrics().finished_cancelled, 1);
  EXPECT_EQ(e.metrics().running, 0);
}

TEST(PublicApi, GenerateAndModelFacts) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  EngineOptions o;
  o.model = path;
  o.ctx_size = 256;
  {
    // kv_cache_dtype "auto" (the default): stories260K's weights are f32, so the cache is too.
    auto f32 = Engine::create(o);
    ASSERT_TRUE(f32.ok()) << f32.status().to_string();
    EXPECT_EQ((*f32)->kv_cache_info().dtype, "f32");
    EXPECT_EQ((*f32)->kv_cache_info().bytes_per_token, 1280u);
    EXPECT_EQ((*f32)->model_info().quantize_candidates, 0);
    o.quantize = "q8_0";  // quantized weights: f16
    auto q8 = Engine::create(o);
    ASSERT_TRUE(q8.ok()) << q8.status().to_string();
    EXPECT_EQ((*q8)->kv_cache_info().dtype, "f16");
    // The output and 5 layers x 7 matrices considered; the 5 ffn_down
    // (172 columns) do not fit 32-element blocks.
    EXPECT_EQ((*q8)->model_info().quantize_candidates, 36);
    EXPECT_EQ((*q8)->model_info().quantized_matrices, 31);
    // K-quants need rows of 256: none of stories260K's fit, nothing changes.
    o.quantize = "q5_k";
    auto q5k = Engine::create(o);
    ASSERT_TRUE(q5k.ok()) << q5k.status().to_string();
    EXPECT_EQ((*q5k)->model_info().quantize_candidates, 36);
    EXPECT_EQ((*q5k)->model_info().quantized_matrices, 0);
    EXPECT_EQ((*q5k)->model_info().weight_bytes, (*f32)->model_info().weight_bytes);
    o.quantize = "q4_k_m";  // a mix: no row fits its K-quants either
    auto q4km = Engine::create(o);
    ASSERT_TRUE(q4km.ok()) << q4km.status().to_string();
    EXPECT_EQ((*q4km)->model_info().quantized_matrices, 0);
    o.quantize = "f16";  // not a load-time type
    EXPECT_EQ(Engine::create(o).status().code(), StatusCode::kInvalidArgument);
    // The other load-time types: each matrix that fits 32-element blocks
    // takes the type's block size (Q4_1 20, Q5_0 22, Q5_1 24 bytes per 32
    // weights; ffn_down's 172 columns stay f32), so the weight bytes step by
    // 2 bytes per block from one type to the next; each engine generates.
    GenerationOptions g;
    g.max_tokens = 8;
    g.sampling.temperature = 0;
    const std::vector<int32_t> prompt = *(*f32)->tokenize("Once upon a time", true);
    std::vector<uint64_t> bytes;
    for (const char* t : {"q4_1", "q5_0", "q5_1"}) {
      SCOPED_TRACE(t);
      o.quantize = t;
      auto q = Engine::create(o);
      ASSERT_TRUE(q.ok()) << q.status().to_string();
      bytes.push_back((*q)->model_info().weight_bytes);
      EXPECT_LT(bytes.back(), (*q8)->model_info().weight_bytes);
      auto out = (*q)->generate(prompt, g);
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      EXPECT_EQ(out->choices.at(0).tokens.size(), 8u);
    }
    EXPECT_GT(bytes[1], bytes[0]);
    EXPECT_EQ(bytes[2] - bytes[1], bytes[1] - bytes[0]);
    o.quantize.clear();
  }
  o.kv_cache_dtype = "f16";
  auto engine = Engine::create(o);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  Engine& e = **engine;
  const ModelInfo& m = e.model_info();
  EXPECT_EQ(m.n_layers, 5);
  EXPECT_EQ(m.n_embd, 64);
  EXPECT_EQ(m.n_ff, 172);
  EXPECT_EQ(m.n_heads, 8);
  EXPECT_EQ(m.n_kv_heads, 4);
  EXPECT_EQ(m.head_dim, 8);
  EXPECT_GT(m.weight_bytes, 0u);
  const KvCacheInfo& kv = e.kv_cache_info();
  EXPECT_EQ(kv.dtype, "f16");           // asked for below; the default "auto" is checked after
  EXPECT_EQ(kv.bytes_per_token, 640u);  // 2 x 5 layers x 4 kv heads x 8 x 2 bytes
  EXPECT_EQ(kv.capacity_tokens, 256);
  EXPECT_EQ(kv.capacity_tokens, kv.num_blocks * kv.block_size);
  EXPECT_EQ(kv.total_bytes, 640u * 256u);
  ASSERT_NE(e.vocab(), nullptr);
  EXPECT_EQ(e.vocab()->size(), 512);

  // generate() is submit + run_until_idle: the same greedy tokens and text.
  GenerationOptions g;
  g.max_tokens = 24;
  g.sampling.temperature = 0;
  const std::vector<int32_t> prompt = *e.tokenize("Once upon a time", true);
  std::string streamed;
  auto out = e.generate(prompt, g, [&](const StreamEvent& ev) { streamed += ev.text; });
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ(out->choices.size(), 1u);
  EXPECT_EQ(out->choices[0].tokens.size(), 24u);
  EXPECT_EQ(streamed, out->choices[0].text);
  EXPECT_EQ(*e.detokenize(out->choices[0].tokens), out->choices[0].text);
  EXPECT_EQ(out->metrics.generated_tokens, 24);
  std::vector<int32_t> submitted;
  ASSERT_TRUE(e.submit(prompt, g, [&](const RequestEvent& ev) {
                 if (ev.step.token >= 0) submitted.push_back(ev.step.token);
               }).ok());
  e.run_until_idle();
  EXPECT_EQ(submitted, out->choices[0].tokens);
  // An empty prompt is the request's own error.
  EXPECT_FALSE(e.generate({}, g).ok());
}

TEST(PublicApi, VocabAloneAndControlTokenSpellings) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  auto v = Vocab::load(path);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  const Vocab& vocab = **v;
  EXPECT_EQ(vocab.size(), 512);
  EXPECT_EQ(vocab.bos_id(), 1);
  EXPECT_EQ(vocab.eos_id(), 2);
  EXPECT_TRUE(vocab.is_eog(2));
  EXPECT_EQ(vocab.encode("Once upon a time", true), (std::vector<int32_t>{1, 403, 407, 261, 378}));
  // "<s>" in plain text is characters; with parse_special it is BOS (id 1).
  const std::vector<int32_t> plain = vocab.encode("a <s> b", false);
  const std::vector<int32_t> parsed = vocab.encode("a <s> b", false, /*parse_special=*/true);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_EQ(std::count(parsed.begin(), parsed.end(), 1), 1);
  EXPECT_EQ(*vocab.decode(plain), "a <s> b");
  EXPECT_EQ(vocab.decode(std::vector<int32_t>{512}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(vocab.token_text(-1), "");
  EXPECT_EQ(vocab.token_piece(403), " Once");
  EXPECT_FALSE(Vocab::load("/nonexistent.gguf").ok());
}

TEST(PublicApi, ChatFormatterRendersAndTokenizes) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  auto v = Vocab::load(path);
  ASSERT_TRUE(v.ok());
  auto f = ChatFormatter::create(**v,
                                 "{{ bos_token }}{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n"
                                 "{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  auto p = (*f)->render(R"([{"role": "user", "content": "Hi"}])");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->text, "<s>[user] Hi\n[assistant]");
  // The template wrote BOS, so it is not added a second time.
  EXPECT_EQ(p->tokens.front(), 1);
  EXPECT_EQ(std::count(p->tokens.begin(), p->tokens.end(), 1), 1);
  EXPECT_EQ((*f)->render("{not json").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*f)->render("[1, 2]").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ChatFormatter::create(**v, "{% for %}").status().code(), StatusCode::kInvalidArgument);
}

TEST(PublicApi, ModelFileTools) {
  const std::string out = (std::filesystem::temp_directory_path() / "tessera_public_api_tiny.gguf").string();
  {
    // The tiny shape's 64-wide rows fit no 256-element K-quant block: every
    // matrix falls back to q4_0 and says so.
    auto k = tools::write_random_model("tiny", "q3_k", 7, 1, out);
    ASSERT_TRUE(k.ok()) << k.status().to_string();
    ASSERT_FALSE(k->notes.empty());
    EXPECT_NE(k->notes[0].find("is not a multiple of 256 for q3_k, using q4_0"), std::string::npos) << k->notes[0];
  }
  auto made = tools::write_random_model("tiny", "q8_0", 7, 1, out);
  ASSERT_TRUE(made.ok());
  EXPECT_TRUE(made->notes.empty());
  auto report = tools::inspect(out);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_NE(report->find("architecture: llama"), std::string::npos) << *report;
  EXPECT_NE(report->find("q8_0"), std::string::npos) << *report;
  const std::string q4 = out + ".q4_0.gguf";
  int calls = 0;
  auto q = tools::quantize(out, q4, "q4_0", 1, [&](int done, int total, const std::string&) {
    EXPECT_LE(done, total);
    ++calls;
  });
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_GT(q->n_quantized, 0);
  EXPECT_EQ(calls, q->n_tensors);
  EXPECT_EQ(tools::quantize(out, q4, "q3_z", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tools::quantize(out, "", "q4_0", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tools::write_random_model("tiny", "q8_0", 7, 1, "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tools::write_random_model("no-such-shape", "f16", 1, 1, out).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(tools::inspect("/nonexistent.gguf").ok());
  EXPECT_EQ(tools::convert_hf("/nonexistent", out, {.dtype = "f8"}).status().code(), StatusCode::kInvalidArgument);
  std::filesystem::remove(out);
  std::filesystem::remove(q4);
}

}  // namespace
}  // namespace tessera
