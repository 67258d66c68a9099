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

  // Renders `messages_json`, a JSON array of {"role", "content"} objects
  // (content a string; other keys such as "name" or "tool_calls" reach the
  // template as they are), with bos_token/eos_token from the vocabulary and
  // add_generation_prompt. Errors: kInvalidArgument for JSON that is not an
  // array of objects, raise_exception() in the template or a template runtime
  // error; kResourceExhausted when the template exceeds the interpreter's limits.
  Result<ChatPrompt> render(std::string_view messages_json, bool add_generation_prompt = true) const;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
