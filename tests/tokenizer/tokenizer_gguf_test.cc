// Tokenizer::from_gguf: model dispatch and metadata validation.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace tessera {
namespace {

using testing::synth_llama_vocab;
using testing::to_memory_gguf;

Status build(const GgufWriter& w) {
  testing::MemoryGguf m = to_memory_gguf(w);
  if (m.file == nullptr) return internal_error("could not write/parse the synthetic GGUF");
  return Tokenizer::from_gguf(*m.file).status();
}

TEST(TokenizerFromGguf, UnknownModelIsUnimplemented) {
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "t5");
  w.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
  const Status st = build(w);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("t5 tokenizers are not supported"), std::string::npos) << st.message();
}

TEST(TokenizerFromGguf, Gpt2VocabFileLoads) {
  TESSERA_REQUIRE_SHARED_FILE(path, "testdata/tokenizer/ggml-vocab-gpt-2.gguf");
  Result<GgufFile> f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_TRUE(Tokenizer::from_gguf(*f).ok());
}

TEST(TokenizerFromGguf, MissingModelOrTokens) {
  GgufWriter none;
  none.add_string("general.architecture", "llama");
  Status st = build(none);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("tokenizer.ggml.model"), std::string::npos);

  GgufWriter no_tokens;
  no_tokens.add_string("tokenizer.ggml.model", "llama");
  st = build(no_tokens);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("tokenizer.ggml.tokens"), std::string::npos);
}

TEST(TokenizerFromGguf, LengthMismatchNamesKey) {
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
  w.add_float32_array("tokenizer.ggml.scores", {0, 0});
  Status st = build(w);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("tokenizer.ggml.scores"), std::string::npos) << st.message();

  GgufWriter t;
  t.add_string("tokenizer.ggml.model", "llama");
  t.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
  t.add_int32_array("tokenizer.ggml.token_type", {2, 3, 3, 1});
  st = build(t);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("tokenizer.ggml.token_type"), std::string::npos) << st.message();
}

TEST(TokenizerFromGguf, BadTokenTypeOrByteToken) {
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
  w.add_int32_array("tokenizer.ggml.token_type", {2, 3, 9});
  EXPECT_EQ(build(w).code(), StatusCode::kDataLoss);

  GgufWriter b;
  b.add_string("tokenizer.ggml.model", "llama");
  b.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "<0xZZ>"});
  b.add_int32_array("tokenizer.ggml.token_type", {2, 3, 3, 6});
  EXPECT_EQ(build(b).code(), StatusCode::kDataLoss);
}

TEST(TokenizerFromGguf, SpecialIdsOutOfRange) {
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
                          "tokenizer.ggml.eot_token_id"}) {
    GgufWriter w;
    w.add_string("tokenizer.ggml.model", "llama");
    w.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
    w.add_uint32(key, 3);
    const Status st = build(w);
    EXPECT_EQ(st.code(), StatusCode::kDataLoss) << key;
    EXPECT_NE(st.message().find(key), std::string::npos) << st.message();
  }
}

TEST(TokenizerFromGguf, WrongTypeIsInvalidArgument) {
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
  w.add_string("tokenizer.ggml.add_bos_token", "yes");
  EXPECT_EQ(build(w).code(), StatusCode::kInvalidArgument);
}

TEST(TokenizerFromGguf, DefaultsAndEog) {
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "<|end|>", "x"});
  w.add_int32_array("tokenizer.ggml.token_type", {2, 3, 3, 3, 1});
  w.add_int32("tokenizer.ggml.padding_token_id", -1);
  testing::MemoryGguf m = to_memory_gguf(w);
  ASSERT_NE(m.file, nullptr);
  auto tok = Tokenizer::from_gguf(*m.file);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->bos_id(), 1);
  EXPECT_EQ((*tok)->eos_id(), 2);
  EXPECT_EQ((*tok)->unk_id(), 0);
  EXPECT_EQ((*tok)->pad_id(), -1);
  EXPECT_TRUE((*tok)->add_bos());
  EXPECT_FALSE((*tok)->add_eos());
  EXPECT_TRUE((*tok)->add_space_prefix());
  EXPECT_TRUE((*tok)->is_eog(2));
  EXPECT_TRUE((*tok)->is_eog(3));
  EXPECT_FALSE((*tok)->is_eog(4));
  EXPECT_EQ((*tok)->n_vocab(), 5);
}

TEST(TokenizerFromGguf, Phi3Eog) {
  TESSERA_REQUIRE_SHARED_FILE(path, "testdata/tokenizer/ggml-vocab-phi-3.gguf");
  std::unique_ptr<Tokenizer> tok = testing::load_tokenizer(path);
  ASSERT_NE(tok, nullptr);
  EXPECT_TRUE(tok->is_eog(tok->eos_id()));
  EXPECT_FALSE(tok->is_eog(tok->bos_id()));
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

std::vector<int32_t> cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Tokenizer::encode with special ranges: control tokens match only where they
// lie wholly inside a range (issue #17: chat templates' spans vs caller text).
void check_special_ranges(const std::string& relative) {
  SCOPED_TRACE(relative);
  const std::string path = testing::shared_path(relative);
  if (!testing::file_exists(path)) {
    if (testing::skip_missing_data()) GTEST_SKIP() << "missing " << path;
    FAIL() << testing::missing_data_message(path);
  }
  Result<GgufFile> f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  auto tok = Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const Tokenizer& t = **tok;
  const int32_t eos = t.eos_id();
  ASSERT_EQ(t.token_type(eos), TokenType::kControl);
  const std::string e = t.token_text(eos);
  const std::string text = e + "a" + e + "b" + e;  // control spellings at the start, middle and end
  const size_t n = e.size();
  using R = std::vector<TextRange>;
  auto enc = [&](const R& ranges) { return t.encode(text, false, std::span<const TextRange>(ranges)); };
  EXPECT_EQ(enc({}), t.encode(text, false));
  EXPECT_EQ(enc({{0, text.size()}}), t.encode(text, false, /*parse_special=*/true));
  // Only the first and the last are template text.
  EXPECT_EQ(enc({{0, n}, {2 * n + 2, 3 * n + 2}}), cat({{eos}, t.encode("a" + e + "b", false), {eos}}));
  // Only the middle one.
  EXPECT_EQ(enc({{n + 1, 2 * n + 1}}), cat({t.encode(e + "a", false), {eos}, t.encode("b" + e, false)}));
  // A range that covers all but one byte of a spelling matches nothing.
  EXPECT_EQ(enc({{0, n - 1}, {n + 2, 2 * n + 1}}), t.encode(text, false));
  // Ranges that split one spelling between them match nothing either.
  EXPECT_EQ(enc({{0, 1}, {1, n}}), t.encode(text, false));
}

TEST(TokenizerSpecialRanges, SentencePiece) { check_special_ranges("testdata/tokenizer/ggml-vocab-llama-spm.gguf"); }
TEST(TokenizerSpecialRanges, ByteLevelBpe) { check_special_ranges("testdata/tokenizer/ggml-vocab-gpt-2.gguf"); }

}  // namespace
}  // namespace tessera
