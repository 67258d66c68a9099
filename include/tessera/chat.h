// Chat prompts: OpenAI-style messages rendered with a model's chat template
// (a Jinja2 program from the model file, run by tessera's sandboxed
// interpreter with limits on output size, recursion and steps) and
// tokenized. Thread safety: render() is const and may run on many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.h"
#include "tessera/vocab.h"

namespace tessera {

// A rendered conversation.
struct ChatPrompt {
  std::string text;             // the template's output
  std::vector<int32_t> tokens;  // what the model receives (BOS added unless the template wrote it)
};

class ChatFormatter {
 public:
  // Parses `template_source` (Jinja; Vocab::chat_template() for the model's
  // own). `vocab` must outlive the formatter. Errors: a template that does
  // not parse (kInvalidArgument naming line and column).
  static Result<std::unique_ptr<ChatFormatter>> create(const Vocab& vocab, std::string_view template_source);

  struct Impl;  // defined by the implementation
  explicit ChatFormatter(std::unique_ptr<Impl> impl);
  ~ChatFormatter();
  ChatFormatter(const ChatFormatter&) = delete;
  ChatFormatter& operator=(const ChatFormatter&) = delete;

  // Renders `messages_json`, a non-empty JSON array of OpenAI messages
  // ({"role": "system"|"user"|"assistant"|"tool"|"developer", "content": a
  // string or [{"type": "text", "text": ...}], other keys such as "name" or
  // "tool_calls" passed to the template), with `tools_json` (an OpenAI tools
  // array, or empty for none), bos_token/eos_token from the vocabulary and
  // add_generation_prompt. The security rule: message content, roles, names,
  // tool calls and tools are caller text, and a control-token spelling in
  // them ("</s>", "<|im_start|>") is tokenized as plain characters; only what
  // the template itself writes can become control tokens. BOS is prepended
  // when the vocabulary adds one and the template did not write it.
  // Errors: kInvalidArgument for malformed JSON, a bad message (named) or a
  // template error; kResourceExhausted when the template exceeds the
  // interpreter's limits (output size, recursion, loop iterations, time).
  Result<ChatPrompt> render(std::string_view messages_json, std::string_view tools_json = {},
                            bool add_generation_prompt = true) const;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
