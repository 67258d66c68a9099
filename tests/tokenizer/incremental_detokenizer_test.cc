// IncrementalDetokenizer: UTF-8 safe streaming of token pieces.
#include "tokenizer/incremental_detokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_support.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace tessera {
namespace {

using testing::load_tokenizer;

bool is_well_formed(std::string_view s) {
  while (!s.empty()) {
    const utf8::ScanResult r = utf8::scan(s);
    if (r.kind != utf8::Scan::kValid) return false;
    s.remove_prefix(r.length);
  }
  return true;
}

class DetokStories : public ::testing::Test {
 protected:
  void SetUp() override {
    TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
    tok_ = load_tokenizer(path);
    ASSERT_NE(tok_, nullptr);
  }
  int32_t byte_token(uint8_t b) const { return static_cast<const SpmTokenizer&>(*tok_).byte_token(b); }
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(DetokStories, MultiByteCharacterSplitAcrossByteTokens) {
  const std::string text = "Hi \xF0\x9F\x98\x80 and \xE4\xB8\xAD\xE6\x96\x87!";  // 😀, 中文
  const std::vector<int32_t> ids = tok_->encode(text, true);
  IncrementalDetokenizer detok(*tok_, /*strip_leading_space=*/true);
  std::string streamed;
  bool held_back = false;
  for (int32_t id : ids) {
    const std::string part = detok.push(id);
    EXPECT_TRUE(is_well_formed(part)) << "push emitted a broken sequence";
    if (detok.pending_bytes() > 0) held_back = true;
    streamed += part;
  }
  streamed += detok.flush();
  EXPECT_TRUE(held_back);  // the test really exercised split characters
  EXPECT_EQ(streamed, tok_->decode(ids));
  EXPECT_EQ(streamed, text);
}

TEST_F(DetokStories, ByteByByte) {
  IncrementalDetokenizer detok(*tok_);
  EXPECT_EQ(detok.push(byte_token(0xE4)), "");
  EXPECT_EQ(detok.push(byte_token(0xB8)), "");
  EXPECT_EQ(detok.pending_bytes(), 2u);
  EXPECT_EQ(detok.push(byte_token(0xAD)), "\xE4\xB8\xAD");
  EXPECT_EQ(detok.pending_bytes(), 0u);
  EXPECT_EQ(detok.flush(), "");
}

TEST_F(DetokStories, FlushOfIncompleteSequenceGivesReplacementChar) {
  IncrementalDetokenizer detok(*tok_);
  EXPECT_EQ(detok.push(byte_token('a')), "a");
  EXPECT_EQ(detok.push(byte_token(0xF0)), "");
  EXPECT_EQ(detok.push(byte_token(0x9F)), "");
  EXPECT_EQ(detok.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(detok.flush(), "");
  EXPECT_EQ(detok.push(byte_token('b')), "b");
}

TEST_F(DetokStories, InvalidBytesBecomeReplacementChars) {
  IncrementalDetokenizer detok(*tok_);
  // A lone continuation byte is replaced at once; a lead byte followed by a
  // non-continuation byte is replaced when the next byte arrives.
  EXPECT_EQ(detok.push(byte_token(0x80)), "\xEF\xBF\xBD");
  EXPECT_EQ(detok.push(byte_token(0xE4)), "");
  EXPECT_EQ(detok.push(byte_token('x')), "\xEF\xBF\xBDx");
  EXPECT_EQ(detok.push(byte_token(0xFF)), "\xEF\xBF\xBD");
}

TEST_F(DetokStories, LeadingSpace) {
  const std::vector<int32_t> ids = {1, 403, 407, 261, 378};  // <s> Once upon a time
  {
    IncrementalDetokenizer detok(*tok_, /*strip_leading_space=*/true);
    std::string s;
    for (int32_t id : ids) s += detok.push(id);
    EXPECT_EQ(s + detok.flush(), "Once upon a time");
  }
  {
    IncrementalDetokenizer detok(*tok_);  // continuation of a prompt: keep the space
    std::string s;
    for (int32_t id : ids) s += detok.push(id);
    EXPECT_EQ(s + detok.flush(), " Once upon a time");
  }
}

TEST(DetokVocabVectors, StreamingEqualsDecode) {
  TESSERA_REQUIRE_SHARED_FILE(vocab, "testdata/tokenizer/ggml-vocab-llama-spm.gguf");
  std::unique_ptr<Tokenizer> tok = load_tokenizer(vocab);
  ASSERT_NE(tok, nullptr);
  for (const std::string text : {"Hello world", "\xE1\x84\x80\xE1\x85\xA1 \xF0\x9F\x9A\x80 (normal) \xF0\x9F\x98\xB6\xE2\x80\x8D\xF0\x9F\x8C\xAB\xEF\xB8\x8F",
                                 "\xF0\x9F\xA6\x99\xF0\x9F\xA6\x99 3333", "\n\n\t x"}) {
    const std::vector<int32_t> ids = tok->encode(text, true);
    IncrementalDetokenizer detok(*tok, true);
    std::string s;
    for (int32_t id : ids) {
      const std::string part = detok.push(id);
      EXPECT_TRUE(is_well_formed(part));
      s += part;
    }
    s += detok.flush();
    EXPECT_EQ(s, tok->decode(ids));
    EXPECT_EQ(s, text);
  }
}

}  // namespace
}  // namespace tessera
