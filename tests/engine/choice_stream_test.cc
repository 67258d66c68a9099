// Streaming text of one choice: UTF-8 held back across byte tokens, stop
// strings cut before they appear, and an end in the middle of a character.
#include "engine/choice_stream.h"

#include <gtest/gtest.h>

#include "formats/gguf_reader.h"
#include "test_support.h"

namespace tessera {
namespace {

class ChoiceStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
    auto g = GgufFile::open(path);
    ASSERT_TRUE(g.ok());
    auto t = Tokenizer::from_gguf(*g);
    ASSERT_TRUE(t.ok());
    tok_ = std::move(t).value();
  }
  int32_t byte_token(int b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    for (int32_t id = 0; id < tok_->n_vocab(); ++id) {
      if (tok_->token_text(id) == name) return id;
    }
    ADD_FAILURE() << "no byte token " << name;
    return 0;
  }
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(ChoiceStreamTest, EndInTheMiddleOfACharacterYieldsReplacementNotBrokenUtf8) {
  // U+2581-like 3-byte sequence E2 96 81 cut after two bytes (max_tokens reached).
  ChoiceStream s(tok_.get(), {});
  EXPECT_EQ(s.push(byte_token(0xE2), true).text, "");
  EXPECT_EQ(s.push(byte_token(0x96), true).text, "");
  EXPECT_EQ(s.finish(), "\xEF\xBF\xBD");
}

TEST_F(ChoiceStreamTest, CompleteCharacterIsReleasedWhole) {
  ChoiceStream s(tok_.get(), {});
  EXPECT_EQ(s.push(byte_token(0xC3), true).text, "");
  EXPECT_EQ(s.push(byte_token(0xA9), true).text, "\xC3\xA9");  // é
  EXPECT_EQ(s.finish(), "");
}

TEST_F(ChoiceStreamTest, StopStringAcrossTokensIsCutAndHeldTextReleasedAtTheEnd) {
  const auto ids = tok_->encode("Lily saw a dog", false);
  ChoiceStream s(tok_.get(), {"saw a cat"});
  std::string out;
  bool stopped = false;
  for (int32_t id : ids) {
    auto o = s.push(id, true);
    out += o.text;
    stopped |= o.stopped;
  }
  EXPECT_FALSE(stopped);
  out += s.finish();  // "saw a " was held back as a possible stop prefix
  EXPECT_EQ(out, " Lily saw a dog");
  ChoiceStream s2(tok_.get(), {"saw a"});
  std::string out2;
  for (int32_t id : ids) {
    auto o = s2.push(id, true);
    out2 += o.text;
    if (o.stopped) break;
  }
  EXPECT_EQ(out2, " Lily ");
}

}  // namespace
}  // namespace tessera
