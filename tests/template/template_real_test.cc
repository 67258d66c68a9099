// Real published chat templates (tests/data/chat_templates/) rendered with a
// system message and a user / assistant / user conversation, with
// add_generation_prompt=true. Expected strings were produced by rendering the
// same files with Python jinja2 3.1.6 configured like transformers'
// apply_chat_template (ImmutableSandboxedEnvironment(trim_blocks=True,
// lstrip_blocks=True), loopcontrols, raise_exception, transformers' tojson)
// and reviewed by hand.
#include <gtest/gtest.h>

#include <ctime>
#include <fstream>
#include <sstream>

#include "template/chat_template.h"

namespace tessera {
namespace {

const char* const kConversation = R"([
  {"role": "system", "content": "You are a helpful assistant."},
  {"role": "user", "content": "Hello!"},
  {"role": "assistant", "content": "Hi there. How can I help?"},
  {"role": "user", "content": "What is 2+2?"}])";
const char* const kConversationNoSystem = R"([
  {"role": "user", "content": "Hello!"},
  {"role": "assistant", "content": "Hi there. How can I help?"},
  {"role": "user", "content": "What is 2+2?"}])";
const char* const kThinkConversation = R"([
  {"role": "system", "content": "Be brief."},
  {"role": "user", "content": "Hello!"},
  {"role": "assistant", "content": "<think>\nThe user greets.\n</think>\n\nHi!"},
  {"role": "user", "content": "What is 2+2?"}])";

std::string read_template(const std::string& file) {
  std::ifstream in(std::string(TESSERA_CHAT_TEMPLATE_DIR) + "/" + file, std::ios::binary);
  EXPECT_TRUE(in.good()) << file;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::ordered_json tools_json() {
  return nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Get the weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");
}

nlohmann::ordered_json context(const std::string& /*file*/, const char* messages, const std::string& bos,
                               const std::string& eos) {
  nlohmann::ordered_json ctx;
  ctx["messages"] = nlohmann::ordered_json::parse(messages);
  ctx["add_generation_prompt"] = true;
  ctx["bos_token"] = bos;
  ctx["eos_token"] = eos;
  return ctx;
}

Result<std::string> try_render_file(const std::string& file, const nlohmann::ordered_json& ctx) {
  auto t = ChatTemplate::parse(read_template(file));
  if (!t.ok()) return t.status();
  return t->render(ctx);
}

std::string render_file(const std::string& file, const nlohmann::ordered_json& ctx) {
  auto r = try_render_file(file, ctx);
  if (!r.ok()) return "ERROR: " + r.status().to_string();
  return *r;
}

TEST(TemplateReal, ChatMl) {
  nlohmann::ordered_json ctx = context("chatml.jinja", kConversation, "<s>", "</s>");
  
  EXPECT_EQ(render_file("chatml.jinja", ctx), R"__(<|im_start|>system
You are a helpful assistant.<|im_end|>
<|im_start|>user
Hello!<|im_end|>
<|im_start|>assistant
Hi there. How can I help?<|im_end|>
<|im_start|>user
What is 2+2?<|im_end|>
<|im_start|>assistant
)__");
}

TEST(TemplateReal, Qwen25) {
  nlohmann::ordered_json ctx = context("qwen2.5-7b-instruct.jinja", kConversation, "", "<|im_end|>");
  
  EXPECT_EQ(render_file("qwen2.5-7b-instruct.jinja", ctx), R"__(<|im_start|>system
You are a helpful assistant.<|im_end|>
<|im_start|>user
Hello!<|im_end|>
<|im_start|>assistant
Hi there. How can I help?<|im_end|>
<|im_start|>user
What is 2+2?<|im_end|>
<|im_start|>assistant
)__");
}

TEST(TemplateReal, Qwen25NoSystem) {
  nlohmann::ordered_json ctx = context("qwen2.5-7b-instruct.jinja", kConversationNoSystem, "", "<|im_end|>");
  
  EXPECT_EQ(render_file("qwen2.5-7b-instruct.jinja", ctx), R"__(<|im_start|>system
You are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>
<|im_start|>user
Hello!<|im_end|>
<|im_start|>assistant
Hi there. How can I help?<|im_end|>
<|im_start|>user
What is 2+2?<|im_end|>
<|im_start|>assistant
)__");
}

TEST(TemplateReal, Qwen25Tools) {
  nlohmann::ordered_json ctx = context("qwen2.5-7b-instruct.jinja", kConversation, "", "<|im_end|>");
  ctx["tools"] = tools_json();
  EXPECT_EQ(render_file("qwen2.5-7b-instruct.jinja", ctx), R"__(<|im_start|>system
You are a helpful assistant.

# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
<|im_start|>user
Hello!<|im_end|>
<|im_start|>assistant
Hi there. How can I help?<|im_end|>
<|im_start|>user
What is 2+2?<|im_end|>
<|im_start|>assistant
)__");
}

TEST(TemplateReal, Qwen3) {
  nlohmann::ordered_json ctx = context("qwen3.jinja", kConversation, "", "<|im_end|>");
  
  EXPECT_EQ(render_file("qwen3.jinja", ctx), R"__(<|im_start|>system
You are a helpful assistant.<|im_end|>
<|im_start|>user
Hello!<|im_end|>
<|im_start|>assistant
Hi there. How can I help?<|im_end|>
<|im_start|>user
What is 2+2?<|im_end|>
<|im_start|>assistant
)__");
}

TEST(TemplateReal, Qwen3Reasoning) {
  nlohmann::ordered_json ctx = context("qwen3.jinja", kThinkConversation, "", "<|im_end|>");
  
  EXPECT_EQ(render_file("qwen3.jinja", ctx), R"__(<|im_start|>system
Be brief.<|im_end|>
<|im_start|>user
Hello!<|im_end|>
<|im_start|>assistant
Hi!<|im_end|>
<|im_start|>user
What is 2+2?<|im_end|>
<|im_start|>assistant
)__");
}

TEST(TemplateReal, Qwen3Tools) {
  nlohmann::ordered_json ctx = context("qwen3.jinja", kConversation, "", "<|im_end|>");
  ctx["tools"] = tools_json();
  EXPECT_EQ(render_file("qwen3.jinja", ctx), R"__(<|im_start|>system
You are a helpful assistant.

# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
<|im_start|>user
Hello!<|im_end|>
<|im_start|>assistant
Hi there. How can I help?<|im_end|>
<|im_start|>user
What is 2+2?<|im_end|>
<|im_start|>assistant
)__");
}

TEST(TemplateReal, Llama3) {
  nlohmann::ordered_json ctx = context("llama-3-8b-instruct.jinja", kConversation, "<|begin_of_text|>", "<|eot_id|>");
  
  EXPECT_EQ(render_file("llama-3-8b-instruct.jinja", ctx), R"__(<|begin_of_text|><|start_header_id|>system<|end_header_id|>

You are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>

Hello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>

Hi there. How can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>

What is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>

)__");
}

TEST(TemplateReal, Llama32) {
  nlohmann::ordered_json ctx = context("llama-3.2-3b-instruct.jinja", kConversation, "<|begin_of_text|>", "<|eot_id|>");
  ctx["date_string"] = "26 Jul 2024";
  EXPECT_EQ(render_file("llama-3.2-3b-instruct.jinja", ctx), R"__(<|begin_of_text|><|start_header_id|>system<|end_header_id|>

Cutting Knowledge Date: December 2023
Today Date: 26 Jul 2024

You are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>

Hello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>

Hi there. How can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>

What is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>

)__");
}

TEST(TemplateReal, Llama32Tools) {
  nlohmann::ordered_json ctx = context("llama-3.2-3b-instruct.jinja", kConversation, "<|begin_of_text|>", "<|eot_id|>");
  ctx["tools"] = tools_json(); ctx["date_string"] = "26 Jul 2024";
  EXPECT_EQ(render_file("llama-3.2-3b-instruct.jinja", ctx), R"__(<|begin_of_text|><|start_header_id|>system<|end_header_id|>

Environment: ipython
Cutting Knowledge Date: December 2023
Today Date: 26 Jul 2024

You are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>

Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.

Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.

{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {
                    "type": "string"
                }
            },
            "required": [
                "city"
            ]
        }
    }
}

Hello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>

Hi there. How can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>

What is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>

)__");
}

TEST(TemplateReal, Llama33) {
  nlohmann::ordered_json ctx = context("llama-3.3-70b-instruct.jinja", kConversation, "<|begin_of_text|>", "<|eot_id|>");
  
  EXPECT_EQ(render_file("llama-3.3-70b-instruct.jinja", ctx), R"__(<|begin_of_text|><|start_header_id|>system<|end_header_id|>

Cutting Knowledge Date: December 2023
Today Date: 26 Jul 2024

You are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>

Hello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>

Hi there. How can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>

What is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>

)__");
}

TEST(TemplateReal, MistralV01NoSystem) {
  nlohmann::ordered_json ctx = context("mistral-7b-instruct-v0.1.jinja", kConversationNoSystem, "<s>", "</s>");
  
  EXPECT_EQ(render_file("mistral-7b-instruct-v0.1.jinja", ctx), R"__(<s>[INST] Hello! [/INST]Hi there. How can I help?</s> [INST] What is 2+2? [/INST])__");
}

TEST(TemplateReal, Phi35) {
  nlohmann::ordered_json ctx = context("phi-3.5-mini-instruct.jinja", kConversation, "<s>", "<|endoftext|>");
  
  EXPECT_EQ(render_file("phi-3.5-mini-instruct.jinja", ctx), R"__(<|system|>
You are a helpful assistant.<|end|>
<|user|>
Hello!<|end|>
<|assistant|>
Hi there. How can I help?<|end|>
<|user|>
What is 2+2?<|end|>
<|assistant|>
)__");
}

TEST(TemplateReal, Gemma2NoSystem) {
  nlohmann::ordered_json ctx = context("gemma-2-2b-it.jinja", kConversationNoSystem, "<bos>", "<eos>");
  
  EXPECT_EQ(render_file("gemma-2-2b-it.jinja", ctx), R"__(<bos><start_of_turn>user
Hello!<end_of_turn>
<start_of_turn>model
Hi there. How can I help?<end_of_turn>
<start_of_turn>user
What is 2+2?<end_of_turn>
<start_of_turn>model
)__");
}

TEST(TemplateReal, DeepSeekR1) {
  nlohmann::ordered_json ctx = context("deepseek-r1-distill-qwen.jinja", kConversation, "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>");
  
  EXPECT_EQ(render_file("deepseek-r1-distill-qwen.jinja", ctx), R"__(<｜begin▁of▁sentence｜>You are a helpful assistant.<｜User｜>Hello!<｜Assistant｜>Hi there. How can I help?<｜end▁of▁sentence｜><｜User｜>What is 2+2?<｜Assistant｜><think>
)__");
}

TEST(TemplateReal, DeepSeekR1Reasoning) {
  nlohmann::ordered_json ctx = context("deepseek-r1-distill-qwen.jinja", kThinkConversation, "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>");
  
  EXPECT_EQ(render_file("deepseek-r1-distill-qwen.jinja", ctx), R"__(<｜begin▁of▁sentence｜>Be brief.<｜User｜>Hello!<｜Assistant｜>

Hi!<｜end▁of▁sentence｜><｜User｜>What is 2+2?<｜Assistant｜><think>
)__");
}

TEST(TemplateReal, GemmaRejectsSystemMessage) {
  auto r = try_render_file("gemma-2-2b-it.jinja", context("", kConversation, "<bos>", "<eos>"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "System role not supported");
}

TEST(TemplateReal, MistralRejectsSystemMessage) {
  auto r = try_render_file("mistral-7b-instruct-v0.1.jinja", context("", kConversation, "<s>", "</s>"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "Conversation roles must alternate user/assistant/user/assistant/...");
}

TEST(TemplateReal, MistralRejectsUnknownRole) {
  auto r = try_render_file("mistral-7b-instruct-v0.1.jinja",
                           context("", R"([{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}])",
                                   "<s>", "</s>"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "Only user and assistant roles are supported!");
}

TEST(TemplateReal, Llama32UsesStrftimeNowWithoutDateString) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%d %b %Y", &tm);
  const std::string out =
      render_file("llama-3.2-3b-instruct.jinja", context("", kConversationNoSystem, "<|begin_of_text|>", ""));
  EXPECT_NE(out.find(std::string("Today Date: ") + buf + "\n\n<|eot_id|>"), std::string::npos) << out;
}

TEST(TemplateReal, ApplyChatTemplateAndContentParts) {
  auto t = ChatTemplate::parse(
      "{% for m in messages %}{{ m.role }}:{% if m.content is string %}{{ m.content }}"
      "{% else %}{% for p in m.content %}{% if p.type == 'text' %}{{ p.text }}{% endif %}{% endfor %}{% endif %}\n"
      "{% endfor %}{% if add_generation_prompt %}{{ bos_token }}|{{ eos_token }}{% endif %}");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  auto messages = nlohmann::json::parse(R"([{"role": "user", "content": [{"type": "text", "text": "a"},
      {"type": "image"}, {"type": "text", "text": "b"}]}, {"role": "assistant", "content": "c"}])");
  auto r = apply_chat_template(*t, messages, true, "<s>", "</s>");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  // trim_blocks drops the newline after {% endif %}.
  EXPECT_EQ(*r, "user:abassistant:c<s>|</s>");
  auto r2 = apply_chat_template(*t, messages, false, "<s>", "</s>");
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(*r2, "user:abassistant:c");
}

TEST(TemplateReal, AllTemplatesParse) {
  for (const char* f : {"chatml.jinja", "deepseek-r1-distill-qwen.jinja", "gemma-2-2b-it.jinja",
                        "llama-3-8b-instruct.jinja", "llama-3.2-3b-instruct.jinja", "llama-3.3-70b-instruct.jinja",
                        "mistral-7b-instruct-v0.1.jinja", "phi-3.5-mini-instruct.jinja", "qwen2.5-7b-instruct.jinja",
                        "qwen3.jinja"}) {
    auto t = ChatTemplate::parse(read_template(f));
    EXPECT_TRUE(t.ok()) << f << ": " << t.status().to_string();
  }
}

}  // namespace
}  // namespace tessera
