// render_chat_tokens: a chat conversation -> the prompt's token ids, with
// the rule that untrusted text never becomes control tokens.
//
// Message content, roles, names, tool calls and tool definitions are caller
// text: "</s>", "<s>", "<|im_start|>" or any other control-token spelling
// inside them is tokenized as the plain characters it is made of. Only what
// the chat template itself writes (its text and string literals, and the
// bos_token / eos_token variables) may become control tokens. The template
// renders with provenance (ChatTemplate::render_tagged) and the tokenizer
// matches control tokens only inside the template's spans
// (Tokenizer::encode with special ranges).
//
// Used by `tessera serve` (/v1/chat/completions, /tokenize with messages)
// and `tessera chat`; meant to be wrapped by the public API as it is.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "template/chat_template.h"
#include "tessera/status.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

struct ChatPromptOptions {
  // Whether the template ends with the assistant's turn header.
  bool add_generation_prompt = true;
  // OpenAI `tools` (an array of tool definitions) given to the template as
  // `tools`; null: none.
  nlohmann::ordered_json tools;
};

struct RenderedChat {
  std::vector<int32_t> token_ids;  // what the model receives
  std::string text;                // the rendered template
  std::vector<TextSpan> spans;     // which bytes of `text` came from the template and which from the caller
};

// Renders `messages` (a non-empty JSON array of {role, content, ...}) with
// `chat_template` and tokenizes the result.
//   - role: "system", "user", "assistant", "tool", or "developer" (given to
//     the template as "system");
//   - content: a string, an array of {"type": "text", "text": ...} parts
//     (concatenated), or null / absent for an assistant message; other
//     fields of a message (name, tool_calls, tool_call_id, ...) are passed
//     to the template unchanged, as caller text;
//   - the template sees messages, tools (when given), add_generation_prompt,
//     bos_token and eos_token (the vocabulary's BOS/EOS texts, "" when none).
// BOS is prepended when the vocabulary adds one (add_bos) and the template
// did not write it; EOS is never appended.
// Errors: kInvalidArgument naming the message ("messages[1]: unknown role
// 'robot'") or the template's error; kResourceExhausted when the template
// exceeds a render limit (chat_template.h).
Result<RenderedChat> render_chat_tokens(const ChatTemplate& chat_template, const nlohmann::ordered_json& messages,
                                      const ChatPromptOptions& options, const Tokenizer& tokenizer);

}  // namespace tessera
