// Byte-level BPE from GGUF "gpt2" vocabularies: llama.cpp's test vectors
// (gpt-2, deepseek-llm, falcon), special tokens, BOS/EOS defaults, chat
// template, robustness; plus the pre-tokenizer building blocks.
#include "tokenizer/bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "test_support.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer_test_util.h"
#include "vocab_vectors.h"

namespace tessera {
namespace {

using testing::ids_string;
using testing::load_tokenizer;
using testing::to_memory_gguf;

// Runs every vector of testdata/tokenizer/ggml-vocab-NAME.gguf; all must match.
void run_vectors(const std::string& name) {
  const std::string base = testing::shared_path("testdata/tokenizer/ggml-vocab-" + name + ".gguf");
  for (const std::string& path : {base, base + ".inp", base + ".out"}) {
    if (!testing::file_exists(path)) {
      if (testing::skip_missing_data()) GTEST_SKIP() << "missing " << path;
      FAIL() << testing::missing_data_message(path);
    }
  }
  std::unique_ptr<Tokenizer> tok = load_tokenizer(base);
  ASSERT_NE(tok, nullptr);
  const std::vector<std::string> inputs = testing::read_vector_inputs(base + ".inp");
  const std::vector<std::vector<int32_t>> expected = testing::read_vector_outputs(base + ".out");
  ASSERT_EQ(inputs.size(), expected.size());
  ASSERT_GT(inputs.size(), 40u);
  size_t passed = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int32_t> got = tok->encode(inputs[i], /*add_special=*/false);
    if (got == expected[i]) {
      ++passed;
    } else {
      ADD_FAILURE() << name << " case " << i << " input \"" << inputs[i] << "\"\n  expected:" << ids_string(expected[i])
                    << "\n  got:     " << ids_string(got);
    }
    EXPECT_EQ(tok->decode(got), inputs[i]) << name << " case " << i;  // byte-level BPE is lossless
  }
  std::printf("%s: %zu/%zu test vectors match\n", name.c_str(), passed, inputs.size());
}

TEST(BpeVocabVectors, Gpt2) { run_vectors("gpt-2"); }
TEST(BpeVocabVectors, DeepseekLlm) { run_vectors("deepseek-llm"); }
TEST(BpeVocabVectors, Falcon) { run_vectors("falcon"); }

class Gpt2Vocab : public ::testing::Test {
 protected:
  void SetUp() override {
    TESSERA_REQUIRE_SHARED_FILE(path, "testdata/tokenizer/ggml-vocab-gpt-2.gguf");
    tok_ = load_tokenizer(path);
    ASSERT_NE(tok_, nullptr);
  }
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(Gpt2Vocab, Metadata) {
  EXPECT_EQ(tok_->n_vocab(), 50257);
  EXPECT_EQ(tok_->bos_id(), 50256);
  EXPECT_EQ(tok_->eos_id(), 50256);
  EXPECT_FALSE(tok_->add_bos());  // gpt-2 pre: llama.cpp adds no BOS
  EXPECT_FALSE(tok_->add_eos());
  EXPECT_TRUE(tok_->is_eog(50256));
  EXPECT_FALSE(tok_->strips_leading_space());
  EXPECT_EQ(tok_->vocabulary().pre, "gpt-2");
  const auto* bpe = dynamic_cast<const BpeTokenizer*>(tok_.get());
  ASSERT_NE(bpe, nullptr);
  EXPECT_EQ(bpe->n_merges(), 50000u);
}

TEST_F(Gpt2Vocab, HelloWorld) {
  EXPECT_EQ(tok_->encode("Hello world", false), (std::vector<int32_t>{15496, 995}));
  EXPECT_EQ(tok_->encode("Hello world", true), (std::vector<int32_t>{15496, 995}));
  EXPECT_EQ(tok_->token_to_piece(995), " world");
  EXPECT_EQ(tok_->token_text(995), "\xC4\xA0world");  // "Ġworld"
  EXPECT_EQ(tok_->decode({15496, 995, 50256}), "Hello world");
}

TEST_F(Gpt2Vocab, ControlTokensOnlyWithParseSpecial) {
  const std::string text = "a<|endoftext|>b";
  const std::vector<int32_t> plain = tok_->encode(text, false);
  for (int32_t id : plain) EXPECT_NE(id, 50256);
  EXPECT_EQ(tok_->decode(plain), text);
  EXPECT_EQ(tok_->encode(text, false, false), plain);
  const std::vector<int32_t> special = tok_->encode(text, false, true);
  ASSERT_EQ(special.size(), 3u);
  EXPECT_EQ(special[1], 50256);
  EXPECT_EQ(special[0], tok_->encode("a", false)[0]);
  EXPECT_EQ(special[2], tok_->encode("b", false)[0]);
  EXPECT_EQ(tok_->decode(special), "ab");  // control tokens decode to nothing
}

TEST_F(Gpt2Vocab, RobustAndFast) {
  for (const std::string& text : {std::string("\x80"), std::string("a\xC3"), std::string("\xE4\xB8 x"),
                                 std::string("\xC0\xAF"), std::string("\xFF\xFE"), std::string("\xED\xA0\x80"),
                                 std::string("ok\xF0\x9F\x98"), std::string(1, '\0'), std::string("")}) {
    EXPECT_EQ(tok_->decode(tok_->encode(text, false)), text);
  }
  std::string text;
  const std::string chunk = "Once upon a time, \xE4\xB8\xAD a cat sat. 12345 \t\n";
  while (text.size() < 200000) text += chunk;
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int32_t> ids = tok_->encode(text, false);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 2.0);
  EXPECT_EQ(tok_->decode(ids), text);
  const std::string spaces(100000, ' ');
  EXPECT_EQ(tok_->decode(tok_->encode(spaces, false)), spaces);
  const std::string letters(100000, 'a');
  EXPECT_EQ(tok_->decode(tok_->encode(letters, false)), letters);
}

TEST(BpeGguf, DeepseekMetadataAndUserDefined) {
  TESSERA_REQUIRE_SHARED_FILE(path, "testdata/tokenizer/ggml-vocab-deepseek-llm.gguf");
  std::unique_ptr<Tokenizer> tok = load_tokenizer(path);
  ASSERT_NE(tok, nullptr);
  EXPECT_TRUE(tok->add_bos());  // tokenizer.ggml.add_bos_token = true
  EXPECT_EQ(tok->bos_id(), 100000);
  EXPECT_EQ(tok->encode("Hello", true), (std::vector<int32_t>{100000, 17464}));
  // "ü" is a user-defined token: always matched, decoded as its text.
  EXPECT_EQ(tok->encode("\xC3\xBC", false), (std::vector<int32_t>{100014}));
  EXPECT_EQ(tok->token_to_piece(100014), "\xC3\xBC");
  EXPECT_EQ(tok->token_to_piece(100000), "");
}

// A synthetic gpt2 vocabulary: the 256 byte-level characters, then `extra`.
GgufWriter synth_gpt2(const std::vector<std::string>& extra, const std::vector<std::string>& merges) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(byte_unicode::byte_to_utf8(static_cast<uint8_t>(b)));
  for (const std::string& e : extra) tokens.push_back(e);
  std::vector<int32_t> types(tokens.size(), 1);
  tokens.emplace_back("<|eot|>");
  types.push_back(3);
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_int32_array("tokenizer.ggml.token_type", types);
  w.add_string_array("tokenizer.ggml.merges", merges);
  return w;
}

TEST(BpeGguf, LowestRankMergesFirst) {
  // "abc": merges "a b" and "b c"; whichever ranks lower wins.
  for (bool ab_first : {true, false}) {
    const std::vector<std::string> merges =
        ab_first ? std::vector<std::string>{"a b", "b c"} : std::vector<std::string>{"b c", "a b"};
    auto m = to_memory_gguf(synth_gpt2({"ab", "bc"}, merges));
    ASSERT_NE(m.file, nullptr);
    auto tok = Tokenizer::from_gguf(*m.file);
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    const int32_t a = 'a', c = 'c', ab = 256, bc = 257;
    EXPECT_EQ((*tok)->encode("abc", false), ab_first ? (std::vector<int32_t>{ab, c}) : (std::vector<int32_t>{a, bc}));
  }
}

TEST(BpeGguf, TiesLeftmostAndChainedMerges) {
  auto m = to_memory_gguf(synth_gpt2({"aa", "aaaa"}, {"a a", "aa aa"}));
  ASSERT_NE(m.file, nullptr);
  auto tok = Tokenizer::from_gguf(*m.file);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const int32_t a = 'a', aa = 256, aaaa = 257;
  EXPECT_EQ((*tok)->encode("aaa", false), (std::vector<int32_t>{aa, a}));
  EXPECT_EQ((*tok)->encode("aaaaa", false), (std::vector<int32_t>{aaaa, a}));
  // The control token is not a merge target and not matched without parse_special.
  EXPECT_EQ((*tok)->encode("<|eot|>", false, true), (std::vector<int32_t>{258}));
  EXPECT_FALSE((*tok)->add_bos());
  EXPECT_EQ((*tok)->bos_id(), -1);
}

TEST(BpeGguf, ChatTemplateAndFlags) {
  GgufWriter w = synth_gpt2({}, {});
  w.add_string("tokenizer.chat_template", "{% for m in messages %}{{ m.content }}{% endfor %}");
  w.add_string("tokenizer.ggml.pre", "llama-bpe");
  w.add_uint32("tokenizer.ggml.bos_token_id", 256);
  auto m = to_memory_gguf(w);
  ASSERT_NE(m.file, nullptr);
  auto tok = Tokenizer::from_gguf(*m.file);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->chat_template(), "{% for m in messages %}{{ m.content }}{% endfor %}");
  EXPECT_TRUE((*tok)->add_bos());  // llama-bpe default
  EXPECT_EQ((*tok)->encode("x", true), (std::vector<int32_t>{256, 'x'}));
}

TEST(BpeGguf, Errors) {
  GgufWriter no_merges;
  no_merges.add_string("tokenizer.ggml.model", "gpt2");
  no_merges.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
  auto m1 = to_memory_gguf(no_merges);
  ASSERT_NE(m1.file, nullptr);
  Status st = Tokenizer::from_gguf(*m1.file).status();
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("tokenizer.ggml.merges"), std::string::npos) << st.message();

  GgufWriter bad_pre = synth_gpt2({}, {});
  bad_pre.add_string("tokenizer.ggml.pre", "no-such-pre");
  auto m2 = to_memory_gguf(bad_pre);
  ASSERT_NE(m2.file, nullptr);
  st = Tokenizer::from_gguf(*m2.file).status();
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("no-such-pre"), std::string::npos) << st.message();

  GgufWriter bad_merge = synth_gpt2({}, {"ab"});
  auto m3 = to_memory_gguf(bad_merge);
  ASSERT_NE(m3.file, nullptr);
  EXPECT_EQ(Tokenizer::from_gguf(*m3.file).status().code(), StatusCode::kDataLoss);
}

TEST(ByteUnicode, Alphabet) {
  EXPECT_EQ(byte_unicode::byte_to_code_point(' '), 0x120u);
  EXPECT_EQ(byte_unicode::byte_to_code_point('A'), static_cast<uint32_t>('A'));
  EXPECT_EQ(byte_unicode::byte_to_code_point(0), 0x100u);
  EXPECT_EQ(byte_unicode::byte_to_code_point(0xAD), 0x143u);
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(byte_unicode::decode(byte_unicode::encode(all)), all);
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(byte_unicode::code_point_to_byte(byte_unicode::byte_to_code_point(static_cast<uint8_t>(b))), b);
  }
  EXPECT_EQ(byte_unicode::code_point_to_byte(0x4E2D), -1);
  EXPECT_EQ(byte_unicode::decode("\xE4\xB8\xAD"), "\xE4\xB8\xAD");  // not in the alphabet: kept
}

std::vector<std::string> pieces_of(const PreTokenizer& pre, std::string_view text) {
  Pieces p;
  pre.run(text, true, p);
  std::vector<std::string> out;
  for (std::string_view v : p.views) out.emplace_back(v);
  return out;
}

TEST(PreTokenizer, SplitBehaviors) {
  using V = std::vector<std::string>;
  const std::string text = "the-final--countdown";
  const std::vector<std::pair<SplitBehavior, V>> cases = {
      {SplitBehavior::kRemoved, {"the", "final", "countdown"}},
      {SplitBehavior::kIsolated, {"the", "-", "final", "-", "-", "countdown"}},
      {SplitBehavior::kMergedWithPrevious, {"the-", "final-", "-", "countdown"}},
      {SplitBehavior::kMergedWithNext, {"the", "-final", "-", "-countdown"}},
      {SplitBehavior::kContiguous, {"the", "-", "final", "--", "countdown"}},
  };
  for (const auto& [behavior, expected] : cases) {
    PreTokenizer pre;
    pre.add(PreTokenizer::split("-", behavior));
    EXPECT_EQ(pieces_of(pre, text), expected) << static_cast<int>(behavior);
  }
  PreTokenizer inverted;
  inverted.add(PreTokenizer::split("-", SplitBehavior::kRemoved, /*invert=*/true));
  EXPECT_EQ(pieces_of(inverted, text), (V{"-", "-", "-"}));
}

TEST(PreTokenizer, GgufPatterns) {
  using V = std::vector<std::string>;
  auto run = [](std::string_view pre, std::string_view text) {
    Result<GgufPreset> p = gguf_preset(pre);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    Pieces pieces;
    p->pre_tokenizer.run(text, true, pieces);
    EXPECT_TRUE(pieces.raw_bytes);  // the byte-level mapping is left to the model
    V out;
    for (std::string_view v : pieces.views) out.emplace_back(v);
    return out;
  };
  EXPECT_EQ(run("gpt-2", "Hello, y'all!  123456\n"), (V{"Hello", ",", " y", "'", "all", "!", " ", " 123456", "\n"}));
  EXPECT_EQ(run("llama-bpe", "Hello, y'all!  123456\n"), (V{"Hello", ",", " y", "'all", "!", " ", " ", "123", "456", "\n"}));
  EXPECT_EQ(run("llama-bpe", "I'LL go\n\n x"), (V{"I", "'LL", " go", "\n\n", " x"}));
  EXPECT_EQ(run("qwen2", "ab 1234"), (V{"ab", " ", "1", "2", "3", "4"}));
  EXPECT_EQ(run("deepseek-llm", "Hi 42\nok"), (V{"Hi", " ", "42", "\n", "ok"}));
  EXPECT_EQ(run("starcoder", "x12"), (V{"x", "1", "2"}));
  EXPECT_FALSE(gguf_preset("unknown").ok());
}

TEST(PreTokenizer, FalconRunsAfterByteLevel) {
  Result<GgufPreset> p = gguf_preset("falcon");
  ASSERT_TRUE(p.ok());
  Pieces pieces;
  p->pre_tokenizer.run("a 12345 x", true, pieces);
  EXPECT_FALSE(pieces.raw_bytes);  // Digits and the 3-digit split see byte-level text
  std::vector<std::string> out(pieces.views.begin(), pieces.views.end());
  EXPECT_EQ(out, (std::vector<std::string>{"a", "\xC4\xA0", "123", "45", "\xC4\xA0x"}));
}

}  // namespace
}  // namespace tessera
