// Tokenizer::from_hf_json / parse_hf_tokenizer on small synthetic
// tokenizer.json files: byte-level BPE, SentencePiece-style BPE with
// byte_fallback (Prepend/Replace normalizer and Metaspace variants), added
// tokens, tokenizer_config.json, errors.
#include "tokenizer/hf_tokenizer_json.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tessera {
namespace {

using Ids = std::vector<int32_t>;

std::unique_ptr<BpeTokenizer> parse_ok(const std::string& json, const std::string& config = {}) {
  Result<std::unique_ptr<BpeTokenizer>> t = parse_hf_tokenizer(json, config, "test.json");
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return t.ok() ? std::move(t).value() : nullptr;
}

// Byte-level BPE: "Ġ" is the byte-level space. Ids 0..9 single characters.
const char* kByteLevelJson = R"({
  "version": "1.0",
  "added_tokens": [
    {"id": 14, "content": "<|end|>", "special": true, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false},
    {"id": 15, "content": "<tool>", "special": false}
  ],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
  "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
    "vocab": {"h": 0, "e": 1, "l": 2, "o": 3, "\u0120": 4, "w": 5, "r": 6, "d": 7, "<": 8, ">": 9,
              "he": 10, "ll": 11, "hello": 12, "\u0120w": 13},
    "merges": ["h e", "l l", "he ll", "hell o", "\u0120 w"]
  }
})";

TEST(HfTokenizerJson, ByteLevelBpe) {
  auto tok = parse_ok(kByteLevelJson, R"({"eos_token": "<|end|>", "add_bos_token": false,
                                         "chat_template": "{{ messages }}"})");
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->n_vocab(), 16);
  // "hell" is not a token: "hello" needs "hell o", whose left part is missing,
  // so "hello" stops at "he" + "ll" + "o".
  EXPECT_EQ(tok->encode("hello", false), (Ids{10, 11, 3}));
  EXPECT_EQ(tok->encode("hello world", false), (Ids{10, 11, 3, 13, 3, 6, 2, 7}));
  EXPECT_EQ(tok->decode(tok->encode("hello world", false)), "hello world");
  EXPECT_EQ(tok->token_to_piece(13), " w");
  EXPECT_EQ(tok->eos_id(), 14);
  EXPECT_TRUE(tok->is_eog(14));
  EXPECT_FALSE(tok->add_bos());
  EXPECT_EQ(tok->chat_template(), "{{ messages }}");
  EXPECT_FALSE(tok->strips_leading_space());
  // Bytes without a token are dropped (no unk_token).
  EXPECT_EQ(tok->encode("hz", false), (Ids{0}));
}

TEST(HfTokenizerJson, AddedTokensAndParseSpecial) {
  auto tok = parse_ok(kByteLevelJson);
  ASSERT_NE(tok, nullptr);
  // Special (control) token: only with parse_special.
  EXPECT_EQ(tok->encode("he<|end|>", false, true), (Ids{10, 14}));
  const Ids plain = tok->encode("he<|end|>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 14), 0);
  EXPECT_EQ(tok->token_type(14), TokenType::kControl);
  EXPECT_EQ(tok->decode({10, 14}), "he");
  // Non-special added token: always matched, decoded as its text.
  EXPECT_EQ(tok->encode("<tool>he", false, false), (Ids{15, 10}));
  EXPECT_EQ(tok->token_type(15), TokenType::kUserDefined);
  EXPECT_EQ(tok->decode({15, 10}), "<tool>he");
}

// A control token that plain text could reach through the model's own
// vocabulary (a one-character lookup or a chain of merges) still comes only
// from parse_special (fuzz/tokenizer_json_fuzz.cc checks the same property).
TEST(HfTokenizerJson, ControlTokensNeverComeFromPlainText) {
  auto tok = parse_ok(R"({
    "added_tokens": [{"id": 4, "content": "<s>", "special": true}, {"id": 5, "content": "x", "special": true}],
    "model": {"type": "BPE", "vocab": {"<": 0, "s": 1, ">": 2, "<s": 3, "<s>": 4, "x": 5, "y": 6},
              "merges": ["< s", "<s >"]}})");
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode("<s>xy", false), (Ids{3, 2, 6}));  // "x" has no other token: dropped (no unk)
  EXPECT_EQ(tok->encode("<s>xy", false, true), (Ids{4, 5, 6}));
  EXPECT_EQ(tok->token_type(4), TokenType::kControl);
}

TEST(HfTokenizerJson, MergesAsPairs) {
  std::string json = kByteLevelJson;
  const std::string from = R"(["h e", "l l", "he ll", "hell o", "\u0120 w"])";
  const std::string to = R"([["h", "e"], ["l", "l"], ["he", "ll"], ["\u0120", "w"]])";
  json.replace(json.find(from), from.size(), to);
  auto tok = parse_ok(json);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode("hello world", false), (Ids{10, 11, 3, 13, 3, 6, 2, 7}));
}

// SentencePiece-style (Llama 2 / Mistral): <unk>, <s>, </s>, 256 byte
// tokens (ids 3..258), then pieces.
std::string spm_json(const std::string& normalizer, const std::string& pre_tokenizer, const std::string& decoder) {
  std::string vocab = R"("<unk>": 0, "<s>": 1, "</s>": 2)";
  for (int b = 0; b < 256; ++b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, R"(, "<0x%02X>": %d)", b, b + 3);
    vocab += buf;
  }
  vocab += R"(, "\u2581": 259, "a": 260, "b": 261, "\u2581a": 262, "ab": 263, "\u2581ab": 264)";
  return R"({
  "added_tokens": [
    {"id": 0, "content": "<unk>", "special": true},
    {"id": 1, "content": "<s>", "special": true},
    {"id": 2, "content": "</s>", "special": true}],
  "normalizer": )" +
         normalizer + R"(,
  "pre_tokenizer": )" +
         pre_tokenizer + R"(,
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
  "decoder": )" +
         decoder + R"(,
  "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
    "vocab": {)" +
         vocab + R"(},
    "merges": ["\u2581 a", "a b", "\u2581a b"]}
})";
}

const char* kLegacyNormalizer = R"({"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": "\u2581"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})";
const char* kLegacyDecoder = R"({"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})";

// `after_control`: the ids of "ab" right after a control token at the start.
void check_spm_behaviour(const BpeTokenizer& tok, const Ids& after_control) {
  EXPECT_TRUE(tok.add_bos());
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_TRUE(tok.strips_leading_space());
  EXPECT_EQ(tok.encode("ab a", true), (Ids{1, 264, 262}));
  EXPECT_EQ(tok.encode("ab a", false), (Ids{264, 262}));
  // "é" (C3 A9) is not a piece: byte fallback.
  EXPECT_EQ(tok.encode("\xC3\xA9", false), (Ids{259, 0xC3 + 3, 0xA9 + 3}));
  EXPECT_EQ(tok.token_type(3), TokenType::kByte);
  EXPECT_EQ(tok.token_type(0), TokenType::kUnknown);
  for (const std::string text : {"ab a", "a  b", "\xC3\xA9t\xC3\xA9", "b"}) {
    EXPECT_EQ(tok.decode(tok.encode(text, true)), text) << text;
  }
  EXPECT_EQ(tok.token_to_piece(262), " a");
  // Control tokens in the text: only with parse_special.
  Ids expected = {1};
  expected.insert(expected.end(), after_control.begin(), after_control.end());
  EXPECT_EQ(tok.encode("<s>ab", false, true), expected);
}

TEST(HfTokenizerJson, SentencePieceStyleLegacyNormalizer) {
  auto tok = parse_ok(spm_json(kLegacyNormalizer, "null", kLegacyDecoder));
  ASSERT_NE(tok, nullptr);
  // The Prepend normalizer runs on every fragment, also after "<s>".
  check_spm_behaviour(*tok, Ids{264});
}

TEST(HfTokenizerJson, SentencePieceStyleMetaspace) {
  auto tok = parse_ok(
      spm_json("null", R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": false})",
               R"({"type": "Sequence", "decoders": [
                                    {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": false},
                                    {"type": "ByteFallback"}, {"type": "Fuse"}]})"));
  ASSERT_NE(tok, nullptr);
  // prepend_scheme "first": only the fragment at the start of the text gets "\u2581".
  check_spm_behaviour(*tok, Ids{263});
}

TEST(HfTokenizerJson, ByteFallbackWithoutByteTokensGivesFusedUnk) {
  std::string json = spm_json(kLegacyNormalizer, "null", kLegacyDecoder);
  const std::string from = R"("byte_fallback": true)";
  json.replace(json.find(from), from.size(), R"("byte_fallback": false)");
  auto tok = parse_ok(json);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode("\xC3\xA9\xC3\xA9", false), (Ids{259, 0}));  // fuse_unk: one <unk>
}

// fuse_unk joins the unknown symbols of one piece, not an unknown symbol
// with a BOS that shares the <unk> id (found by fuzz/tokenizer_json_fuzz.cc:
// the regression input fuzz/regression/tokenizer_json/unk_fused_into_bos).
TEST(HfTokenizerJson, FusedUnkStaysApartFromBos) {
  auto tok = parse_ok(R"({"added_tokens": [{"id": 0, "content": "<unk>", "special": true}],
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "vocab": {"<unk>": 0, "a": 1}, "merges": []}})",
                      R"({"bos_token": "<unk>", "add_bos_token": true})");
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode("zza", true), (Ids{0, 0, 1}));
  EXPECT_EQ(tok->encode("zzaz", false), (Ids{0, 1, 0}));
}

TEST(HfTokenizerJson, ConfigOverridesAndChatTemplateList) {
  auto tok = parse_ok(spm_json(kLegacyNormalizer, "null", kLegacyDecoder),
                      R"({"bos_token": {"content": "<s>", "__type": "AddedToken"}, "eos_token": "</s>",
                          "add_bos_token": false, "add_eos_token": true,
                          "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  ASSERT_NE(tok, nullptr);
  EXPECT_FALSE(tok->add_bos());
  EXPECT_TRUE(tok->add_eos());
  EXPECT_EQ(tok->encode("a", true), (Ids{262, 2}));
  EXPECT_EQ(tok->chat_template(), "D");
}

TEST(HfTokenizerJson, PreTokenizerSequenceWithSplit) {
  // Llama-3 style: Split regex then ByteLevel without regex; ignore_merges.
  std::string json = kByteLevelJson;
  const std::string from = R"({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor")";
  const std::string to = R"({"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\s?\\p{L}+"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
  "post_processor")";
  json.replace(json.find(from), from.size(), to);
  auto tok = parse_ok(json);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode("he wo", false), (Ids{10, 13, 3}));
}

TEST(HfTokenizerJson, Errors) {
  auto code = [](const std::string& json) { return parse_hf_tokenizer(json, "", "t.json").status().code(); };
  EXPECT_EQ(code("{not json"), StatusCode::kDataLoss);
  EXPECT_EQ(code(R"({"model": {"type": "Unigram", "vocab": []}})"), StatusCode::kUnimplemented);
  EXPECT_EQ(code(R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})"), StatusCode::kDataLoss);
  EXPECT_EQ(code(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [3]}})"), StatusCode::kDataLoss);
  std::string json = kByteLevelJson;
  const std::string from = R"("normalizer": null)";
  json.replace(json.find(from), from.size(), R"("normalizer": {"type": "BertNormalizer"})");
  const Status st = parse_hf_tokenizer(json, "", "t.json").status();
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("BertNormalizer"), std::string::npos) << st.message();
  EXPECT_EQ(parse_hf_tokenizer(kByteLevelJson, R"({"eos_token": "<nope>"})", "t.json").status().code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(Tokenizer::from_hf_json("/nonexistent/tokenizer.json", "").status().code(), StatusCode::kNotFound);
}

TEST(HfTokenizerJson, FromHfDir) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("tessera_hf_tok_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << kByteLevelJson;
  std::ofstream(dir / "tokenizer_config.json") << R"({"eos_token": "<|end|>", "chat_template": "X"})";
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::from_hf_dir(dir.string());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->chat_template(), "X");
  EXPECT_EQ((*tok)->eos_id(), 14);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera
