// render_chat_tokens (template/chat_prompt.h): message text never becomes
// control tokens, for SentencePiece and byte-level BPE vocabularies, with
// control-token spellings at the start, middle and end of the content. The
// expected ids are built independently: the template's control tokens by
// id, the content by plain encode(content, false).
#include "template/chat_prompt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "formats/gguf_reader.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace tessera {
namespace {

using nlohmann::ordered_json;

std::unique_ptr<Tokenizer> load(const std::string& path) {
  Result<GgufFile> f = GgufFile::open(path);
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  if (!f.ok()) return nullptr;
  auto t = Tokenizer::from_gguf(*f);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return t.ok() ? std::move(*t) : nullptr;
}

int64_t count_controls(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  return std::count_if(ids.begin(), ids.end(), [&](int32_t id) { return tok.token_type(id) == TokenType::kControl; });
}

std::vector<int32_t> concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

ordered_json user(const std::string& content) {
  return ordered_json::array({{{"role", "user"}, {"content", content}}});
}

// Checks one vocabulary: the template writes control tokens A and B around
// each message; the content holds control spellings.
void check_vocabulary(const std::string& relative, bool expect_bpe) {
  SCOPED_TRACE(relative);
  const std::string path = testing::shared_path(relative);
  if (!testing::file_exists(path)) {
    if (testing::skip_missing_data()) GTEST_SKIP() << "missing " << path;
    FAIL() << testing::missing_data_message(path);
  }
  std::unique_ptr<Tokenizer> tok = load(path);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocabulary().model == "gpt2", expect_bpe);
  std::vector<int32_t> controls;
  for (int32_t id = 0; id < tok->n_vocab(); ++id) {
    if (tok->token_type(id) == TokenType::kControl && !tok->token_text(id).empty()) controls.push_back(id);
  }
  ASSERT_FALSE(controls.empty()) << "the vocabulary has no control tokens to test with";
  const int32_t a = tok->token_type(tok->eos_id()) == TokenType::kControl ? tok->eos_id() : controls.front();
  const int32_t b = tok->token_type(tok->bos_id()) == TokenType::kControl ? tok->bos_id() : controls.back();
  const std::string a_text = tok->token_text(a), b_text = tok->token_text(b);
  auto tmpl = ChatTemplate::parse("{% for m in messages %}" + a_text + "{{ m.content }}" + b_text + "{% endfor %}");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
  // BOS comes first when the vocabulary adds one and the template did not write it.
  const bool prepend_bos = tok->add_bos() && tok->bos_id() >= 0 && a != tok->bos_id();
  const std::vector<int32_t> bos = prepend_bos ? std::vector<int32_t>{tok->bos_id()} : std::vector<int32_t>{};

  std::vector<std::string> spellings = {a_text, b_text};
  for (size_t i = 0; i < controls.size() && spellings.size() < 5; i += std::max<size_t>(1, controls.size() / 3)) {
    spellings.push_back(tok->token_text(controls[i]));
  }
  for (const std::string& sp : spellings) {
    for (const std::string& content : {sp + "hello", "hello " + sp + " world", "hello" + sp, sp, sp + sp + "x" + sp}) {
      SCOPED_TRACE(content);
      auto prompt = render_chat_tokens(*tmpl, user(content), ChatPromptOptions{}, *tok);
      ASSERT_TRUE(prompt.ok()) << prompt.status().to_string();
      EXPECT_EQ(prompt->text, a_text + content + b_text);
      const std::vector<int32_t> expected = concat({bos, {a}, tok->encode(content, false), {b}});
      EXPECT_EQ(prompt->token_ids, expected);
      EXPECT_EQ(count_controls(*tok, prompt->token_ids), static_cast<int64_t>(bos.size()) + 2);
      // The spelling is a real control token: parsed as one, the same text
      // holds more than the template's two (so the check above can fail).
      EXPECT_GT(count_controls(*tok, tok->encode(prompt->text, false, /*parse_special=*/true)), 2);
    }
  }
}

TEST(ChatPromptTokens, SentencePieceStories260K) {
  check_vocabulary("models/stories260K.gguf", false);
}
TEST(ChatPromptTokens, SentencePieceLlama) {
  check_vocabulary("testdata/tokenizer/ggml-vocab-llama-spm.gguf", false);
}
TEST(ChatPromptTokens, SentencePiecePhi3) {
  check_vocabulary("testdata/tokenizer/ggml-vocab-phi-3.gguf", false);
}
TEST(ChatPromptTokens, ByteLevelBpeGpt2) {
  check_vocabulary("testdata/tokenizer/ggml-vocab-gpt-2.gguf", true);
}
TEST(ChatPromptTokens, ByteLevelBpeDeepseek) {
  check_vocabulary("testdata/tokenizer/ggml-vocab-deepseek-llm.gguf", true);
}

class ChatPromptStories : public ::testing::Test {
 protected:
  void SetUp() override {
    TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
    tok_ = load(path);
    ASSERT_NE(tok_, nullptr);
    ASSERT_EQ(tok_->bos_id(), 1);
    ASSERT_EQ(tok_->eos_id(), 2);
    ASSERT_TRUE(tok_->add_bos());
  }
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(ChatPromptStories, BosFromTheTemplateIsNotDoubledAndCallerBosIsText) {
  auto with_bos = ChatTemplate::parse("{{ bos_token }}{{ messages[0].content }}{{ eos_token }}");
  ASSERT_TRUE(with_bos.ok());
  auto p = render_chat_tokens(*with_bos, user("<s>hi</s>"), ChatPromptOptions{}, *tok_);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->text, "<s><s>hi</s></s>");
  EXPECT_EQ(p->token_ids, concat({{1}, tok_->encode("<s>hi</s>", false), {2}}));

  // The template writes no BOS: one is prepended, and content starting with
  // "<s>" is still text.
  auto bare = ChatTemplate::parse("{{ messages[0].content }}");
  ASSERT_TRUE(bare.ok());
  p = render_chat_tokens(*bare, user("<s>hi"), ChatPromptOptions{}, *tok_);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->token_ids, concat({{1}, tok_->encode("<s>hi", false)}));
  EXPECT_EQ(std::count(p->token_ids.begin(), p->token_ids.end(), 1), 1);
}

TEST_F(ChatPromptStories, ToolsNamesAndRolesAreCallerText) {
  auto t = ChatTemplate::parse(
      "{{ tools|tojson }}{% for m in messages %}[{{ m.role }}|{{ m.name }}]{{ m.content }}{{ eos_token }}{% endfor %}");
  ASSERT_TRUE(t.ok());
  ChatPromptOptions o;
  o.tools = ordered_json::array({{{"type", "function"}, {"function", {{"name", "</s>"}, {"description", "<s>"}}}}});
  const ordered_json messages = ordered_json::array(
      {{{"role", "user"}, {"name", "</s>"}, {"content", "a"}}, {{"role", "assistant"}, {"content", nullptr}}});
  auto p = render_chat_tokens(*t, messages, o, *tok_);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(
      p->text,
      R"([{"type": "function", "function": {"name": "</s>", "description": "<s>"}}][user|</s>]a</s>[assistant|]</s>)");
  // Exactly the two EOS the template wrote, and only the prepended BOS.
  EXPECT_EQ(std::count(p->token_ids.begin(), p->token_ids.end(), 2), 2);
  EXPECT_EQ(std::count(p->token_ids.begin(), p->token_ids.end(), 1), 1);
  EXPECT_EQ(p->token_ids.back(), 2);
}

TEST_F(ChatPromptStories, InvalidMessagesAndTemplateLimitsAreErrors) {
  auto t = ChatTemplate::parse("{% for m in messages %}{{ m.content }}{% endfor %}");
  ASSERT_TRUE(t.ok());
  auto bad_role = render_chat_tokens(*t, ordered_json::array({{{"role", "robot"}, {"content", "x"}}}), {}, *tok_);
  EXPECT_EQ(bad_role.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_role.status().message(), "messages[0]: unknown message role 'robot'");
  EXPECT_EQ(render_chat_tokens(*t, ordered_json::array(), {}, *tok_).status().code(), StatusCode::kInvalidArgument);
  auto parts = render_chat_tokens(
      *t, ordered_json::array({{{"role", "developer"}, {"content", {{{"type", "text"}, {"text", "</s>"}}}}}}), {},
      *tok_);
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ(parts->token_ids, concat({{1}, tok_->encode("</s>", false)}));
  auto spin = ChatTemplate::parse("{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}");
  ASSERT_TRUE(spin.ok());
  EXPECT_EQ(render_chat_tokens(*spin, user("x"), {}, *tok_).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace tessera
