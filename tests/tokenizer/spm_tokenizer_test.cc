// SentencePiece BPE tokenizer: llama.cpp's vocabulary test vectors, the
// stories260K vocabulary, byte fallback, special tokens and robustness.
#include "tokenizer/spm_tokenizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"
#include "tokenizer_test_util.h"
#include "vocab_vectors.h"

namespace tessera {
namespace {

using testing::kFirstExtra;
using testing::load_tokenizer;
using testing::synth_llama_vocab;
using testing::to_memory_gguf;


std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    s.push_back(' ');
    s.append(std::to_string(id));
  }
  return s;
}

// Runs every test vector of `vocab` and returns how many matched.
void run_vocab_vectors(const std::string& vocab, const std::string& inp, const std::string& out) {
  std::unique_ptr<Tokenizer> tok = load_tokenizer(vocab);
  ASSERT_NE(tok, nullptr);
  const std::vector<std::string> inputs = testing::read_vector_inputs(inp);
  const std::vector<std::vector<int32_t>> expected = testing::read_vector_outputs(out);
  ASSERT_EQ(inputs.size(), expected.size());
  ASSERT_GT(inputs.size(), 40u);
  size_t passed = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int32_t> got = tok->encode(inputs[i], /*add_special=*/false);
    if (got == expected[i]) {
      ++passed;
    } else {
      ADD_FAILURE() << "case " << i << " input \"" << inputs[i] << "\"\n  expected:" << ids_to_string(expected[i])
                    << "\n  got:     " << ids_to_string(got);
    }
    // SentencePiece decoding inverts encoding for this text.
    EXPECT_EQ(tok->decode(got), inputs[i]) << "case " << i;
  }
  std::printf("%s: %zu/%zu test vectors match\n", vocab.c_str(), passed, inputs.size());
}

TEST(SpmVocabVectors, LlamaSpm) {
  TESSERA_REQUIRE_SHARED_FILE(vocab, "testdata/tokenizer/ggml-vocab-llama-spm.gguf");
  TESSERA_REQUIRE_SHARED_FILE(inp, "testdata/tokenizer/ggml-vocab-llama-spm.gguf.inp");
  TESSERA_REQUIRE_SHARED_FILE(out, "testdata/tokenizer/ggml-vocab-llama-spm.gguf.out");
  run_vocab_vectors(vocab, inp, out);
}

TEST(SpmVocabVectors, Phi3) {
  TESSERA_REQUIRE_SHARED_FILE(vocab, "testdata/tokenizer/ggml-vocab-phi-3.gguf");
  TESSERA_REQUIRE_SHARED_FILE(inp, "testdata/tokenizer/ggml-vocab-phi-3.gguf.inp");
  TESSERA_REQUIRE_SHARED_FILE(out, "testdata/tokenizer/ggml-vocab-phi-3.gguf.out");
  run_vocab_vectors(vocab, inp, out);
}

TEST(SpmVocabVectors, InputFileFormat) {
  TESSERA_REQUIRE_SHARED_FILE(inp, "testdata/tokenizer/ggml-vocab-llama-spm.gguf.inp");
  const std::vector<std::string> inputs = testing::read_vector_inputs(inp);
  ASSERT_GE(inputs.size(), 12u);
  EXPECT_EQ(inputs[1], "F\xC3\xBChrer");
  EXPECT_EQ(inputs[2], "");
  EXPECT_EQ(inputs[3], " ");
  EXPECT_EQ(inputs[7], "\n");
  EXPECT_EQ(inputs[8], "\n\n");
  EXPECT_EQ(inputs[11], "Hello world");
}

class Stories260K : public ::testing::Test {
 protected:
  void SetUp() override {
    TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
    tok_ = load_tokenizer(path);
    ASSERT_NE(tok_, nullptr);
  }
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(Stories260K, VocabularyMetadata) {
  EXPECT_EQ(tok_->n_vocab(), 512);
  EXPECT_EQ(tok_->bos_id(), 1);
  EXPECT_EQ(tok_->eos_id(), 2);
  EXPECT_TRUE(tok_->add_bos());
  EXPECT_FALSE(tok_->add_eos());
  EXPECT_TRUE(tok_->is_eog(2));
  EXPECT_FALSE(tok_->is_eog(1));
  EXPECT_FALSE(tok_->is_eog(403));
  EXPECT_EQ(tok_->token_text(1), "<s>");
  EXPECT_EQ(tok_->token_text(-1), "");
  EXPECT_EQ(tok_->token_text(512), "");
}

TEST_F(Stories260K, OnceUponATime) {
  EXPECT_EQ(tok_->encode("Once upon a time", true), (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(tok_->encode("Once upon a time", false), (std::vector<int32_t>{403, 407, 261, 378}));
  EXPECT_EQ(tok_->decode({1, 403, 407, 261, 378}), "Once upon a time");
  EXPECT_EQ(tok_->token_to_piece(403), " Once");
  EXPECT_EQ(tok_->token_to_piece(1), "");
  EXPECT_EQ(tok_->token_to_piece(2), "");
}

TEST_F(Stories260K, RoundTrip) {
  for (const std::string text :
       {"Once upon a time, there was a little girl named Lily.", "  two  spaces ", "line\nbreak\ttab",
        "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80!", "a"}) {
    const std::vector<int32_t> ids = tok_->encode(text, true);
    EXPECT_EQ(tok_->decode(ids), text);
  }
}

TEST_F(Stories260K, ByteFallback) {
  // "中" (E4 B8 AD) is not one of the 512 tokens: it becomes its three byte tokens.
  const std::vector<int32_t> ids = tok_->encode("\xE4\xB8\xAD", false);
  ASSERT_GE(ids.size(), 3u);
  const std::vector<int32_t> tail(ids.end() - 3, ids.end());
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(tok_->token_type(tail[k]), TokenType::kByte);
  EXPECT_EQ(tok_->token_text(tail[0]), "<0xE4>");
  EXPECT_EQ(tok_->token_text(tail[1]), "<0xB8>");
  EXPECT_EQ(tok_->token_text(tail[2]), "<0xAD>");
  EXPECT_EQ(tok_->token_to_piece(tail[0]), "\xE4");
  EXPECT_EQ(tok_->decode(ids), "\xE4\xB8\xAD");
}

TEST_F(Stories260K, ControlTokensNotProducedFromText) {
  for (const std::string text : {"<s>", "</s>", "<unk>", "a <s> b </s>"}) {
    for (int32_t id : tok_->encode(text, false)) {
      EXPECT_NE(tok_->token_type(id), TokenType::kControl) << text;
      EXPECT_NE(id, tok_->bos_id());
      EXPECT_NE(id, tok_->eos_id());
    }
    EXPECT_EQ(tok_->decode(tok_->encode(text, false)), text);
  }
}

TEST_F(Stories260K, EmptyString) {
  EXPECT_TRUE(tok_->encode("", false).empty());
  EXPECT_EQ(tok_->encode("", true), std::vector<int32_t>{1});
  EXPECT_EQ(tok_->decode({}), "");
  EXPECT_EQ(tok_->decode({1}), "");
}

TEST_F(Stories260K, InvalidUtf8) {
  // Lone continuation byte, truncated sequences, overlong form, 0xFF, surrogate.
  for (const std::string& text : {std::string("\x80"), std::string("a\xC3"), std::string("\xE4\xB8 x"),
                                 std::string("\xC0\xAF"), std::string("\xFF\xFE"), std::string("\xED\xA0\x80"),
                                 std::string("ok\xF0\x9F\x98")}) {
    const std::vector<int32_t> ids = tok_->encode(text, false);
    EXPECT_EQ(tok_->decode(ids), text);
  }
}

TEST_F(Stories260K, LongInputIsFast) {
  std::string text;
  const std::string chunk = "Once upon a time, \xE4\xB8\xAD a cat sat. ";
  while (text.size() < 100000) text += chunk;
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int32_t> ids = tok_->encode(text, false);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 2.0);  // O(n log n): milliseconds in a release build
  EXPECT_EQ(tok_->decode(ids), text);

  // One long run of a single character (many equal-score candidates).
  const std::string run(100000, 'a');
  EXPECT_EQ(tok_->decode(tok_->encode(run, false)), run);
}

TEST_F(Stories260K, OutOfRangeIds) {
  EXPECT_EQ(tok_->token_to_piece(-5), "");
  EXPECT_EQ(tok_->token_to_piece(100000), "");
  EXPECT_EQ(tok_->decode({-1, 403, 99999}), "Once");
  EXPECT_FALSE(tok_->is_eog(-1));
}

TEST(SpmSynthetic, HighestScoreMergesFirstTiesLeftmost) {
  // "abc": "ab" and "bc" both mergeable. Higher score wins; on a tie, the left pair.
  for (float bc_score : {-1.0f, -2.0f, -3.0f}) {
    auto m = to_memory_gguf(synth_llama_vocab({{"a", -10, 1},
                                               {"b", -10, 1},
                                               {"c", -10, 1},
                                               {"ab", -2, 1},
                                               {"bc", bc_score, 1},
                                               {"\xE2\x96\x81", -5, 1}}));
    ASSERT_NE(m.file, nullptr);
    auto tok = Tokenizer::from_gguf(*m.file);
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    const int32_t a = kFirstExtra, b = a + 1, c = a + 2, ab = a + 3, bc = a + 4, sp = a + 5;
    const std::vector<int32_t> ids = (*tok)->encode("abc", false);
    if (bc_score > -2.0f) {
      EXPECT_EQ(ids, (std::vector<int32_t>{sp, a, bc}));
    } else {
      EXPECT_EQ(ids, (std::vector<int32_t>{sp, ab, c}));
    }
    (void)b;
  }
}

TEST(SpmSynthetic, UserDefinedTokensMatchedWhole) {
  // "<tool>" is user-defined; its pieces are not tokens on their own.
  auto m = to_memory_gguf(synth_llama_vocab({{"<tool>", 0, 4}, {"x", -1, 1}, {"\xE2\x96\x81", -1, 1},
                                             {"\xE2\x96\x81x", -0.5f, 1}, {"<ctl>", 0, 3}}));
  ASSERT_NE(m.file, nullptr);
  auto tok = Tokenizer::from_gguf(*m.file);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const int32_t tool = kFirstExtra, x = tool + 1, sp = tool + 2, spx = tool + 3;
  // A fragment after a user-defined token gets the dummy prefix again.
  EXPECT_EQ((*tok)->encode("x<tool>x", false), (std::vector<int32_t>{spx, tool, spx}));
  EXPECT_EQ((*tok)->encode("<tool>", false), (std::vector<int32_t>{tool}));
  EXPECT_EQ((*tok)->token_to_piece(tool), "<tool>");
  // Control token text is not matched: '<' 'c' 't' 'l' '>' become bytes.
  const std::vector<int32_t> ids = (*tok)->encode("<ctl>", false);
  EXPECT_EQ(ids.size(), 6u);
  EXPECT_EQ(ids[0], sp);
  EXPECT_EQ((*tok)->decode(ids), "<ctl>");
  (void)x;
}

TEST(SpmSynthetic, UnusedTokensAreResegmented) {
  auto m = to_memory_gguf(synth_llama_vocab({{"a", -10, 1}, {"b", -10, 1}, {"ab", -1, 5}, {"\xE2\x96\x81", -1, 1}}));
  ASSERT_NE(m.file, nullptr);
  auto tok = Tokenizer::from_gguf(*m.file);
  ASSERT_TRUE(tok.ok());
  const int32_t a = kFirstExtra, b = a + 1, sp = a + 3;
  EXPECT_EQ((*tok)->encode("ab", false), (std::vector<int32_t>{sp, a, b}));
}

TEST(SpmSynthetic, NoSpacePrefixAndAddEos) {
  GgufWriter w = synth_llama_vocab({{"a", -1, 1}, {"\xE2\x96\x81", -1, 1}});
  w.add_bool("tokenizer.ggml.add_space_prefix", false);
  w.add_bool("tokenizer.ggml.add_eos_token", true);
  w.add_bool("tokenizer.ggml.add_bos_token", false);
  auto m = to_memory_gguf(w);
  ASSERT_NE(m.file, nullptr);
  auto tok = Tokenizer::from_gguf(*m.file);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ((*tok)->encode("a a", true),
            (std::vector<int32_t>{kFirstExtra, kFirstExtra + 1, kFirstExtra, 2}));
  EXPECT_EQ((*tok)->decode((*tok)->encode(" a", false)), " a");
}

TEST(SpmSynthetic, NoByteTokensFallsBackToUnk) {
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a"});
  w.add_float32_array("tokenizer.ggml.scores", {0, 0, 0, -1, -1});
  w.add_int32_array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1});
  auto m = to_memory_gguf(w);
  ASSERT_NE(m.file, nullptr);
  auto tok = Tokenizer::from_gguf(*m.file);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->unk_id(), 0);
  EXPECT_EQ((*tok)->encode("a\xC3\xA9", false), (std::vector<int32_t>{3, 4, 0, 0}));
  EXPECT_EQ((*tok)->decode({4, 0}), "a \xE2\x81\x87 ");
}

}  // namespace
}  // namespace tessera
