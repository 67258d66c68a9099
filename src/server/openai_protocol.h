// OpenAI API requests (https://platform.openai.com/docs/api-reference/completions
// and /chat) parsed into engine requests, with OpenAI-style errors
// (`{"error": {"message", "type", "param", "code"}}`).
#pragma once

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tessera/chat.h"
#include "tessera/generation_options.h"
#include "tessera/status.h"
#include "tessera/vocab.h"

namespace tessera::server {

// An error answer: HTTP status plus the OpenAI error object.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // empty: null
  std::string code;   // empty: null
};

// {"error": {"message", "type", "param", "code"}}.
nlohmann::json api_error_body(const ApiError& e);
// A 400 naming `param`.
ApiError bad_request(std::string message, std::string param = {}, std::string code = {});
// An engine Status as an API error (kOutOfRange -> 400 context_length_exceeded,
// kInvalidArgument -> 400, kResourceExhausted -> 429, others -> 500).
ApiError status_error(const Status& st, std::string param = {});

enum class Endpoint { kCompletions, kChat };

// Values for sampling fields a request leaves out (`tessera serve`'s
// "Sampling defaults" flags). The initial values are OpenAI's; a field the
// request sets always wins.
struct RequestDefaults {
  float temperature = 1.0f;
  float top_p = 1.0f;  // 0: greedy, as a request's top_p 0
  int32_t top_k = 0;   // 0: off
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  // none: 16 for completions, until the context is full for chat; -1: until the context is full for both.
  std::optional<int32_t> max_tokens;
};

// What the parser needs to know about the served model.
struct ProtocolContext {
  const Vocab* vocab = nullptr;  // null: token-id prompts only
  int32_t n_vocab = 0;
  std::string served_model;                     // the `model` name clients must use
  const ChatFormatter* chat = nullptr;          // the chat template; null: chat is refused
  int64_t context_tokens = 0;                   // tokens one sequence may hold (prompt + completion); 0: unchecked
  RequestDefaults defaults;
};

// Parses a request body as one JSON object. 400 invalid_json when it is not
// JSON, not an object, or repeats a key in any object (RFC 8259 leaves
// duplicates undefined; they are refused rather than silently resolved).
std::variant<nlohmann::ordered_json, ApiError> parse_json_object(std::string_view body);

// A parsed completion or chat request.
struct ParsedRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;
  std::vector<std::vector<int32_t>> prompts;  // one engine request each (completions may batch prompts)
  GenerationOptions options;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool chat_logprobs = false;  // chat: `logprobs: true`
  // Completions only. `echo`: the prompt comes back before the completion
  // (and, with `logprobs`, its tokens' logprobs too, the first one null).
  bool echo = false;
  // vLLM's `prompt_logprobs: N`: each prompt token's logprob, rank and the
  // N most likely alternatives (-1: not asked). Completions: per choice;
  // chat (not streamed): once, next to `choices`, for the rendered prompt.
  int32_t prompt_logprobs = -1;
  // The prompts as text ([prompt]): the string given, or the token ids decoded.
  std::vector<std::string> prompt_texts;
  // Whether the request needs the prompt tokens scored (options.prompt_logits).
  bool scores_prompt() const { return (echo && options.logprobs >= 0) || prompt_logprobs >= 0; }
  // Alternatives per scored prompt token.
  int prompt_top_n() const { return std::max(prompt_logprobs, echo ? options.logprobs : -1); }
};

// Parses `body` (JSON text) for `endpoint`. Defaults are ctx.defaults,
// initially the OpenAI reference's: temperature 1, top_p 1, no top-k / min-p,
// max_tokens 16 for completions and "until the context is full" for chat, a
// random seed.
// Edges as OpenAI treats them: top_p 0 is greedy; any finite temperature
// >= 0 is accepted (very large ones sample near-uniformly); seed -1 means a
// random seed (as llama.cpp). A default max_tokens that does not fit the
// context after the prompt is shortened to what fits; an explicit one is a
// 400 (context_length_exceeded) naming both numbers.
// Unknown fields are ignored; wrong types and out-of-range values are 400
// errors naming the field; an unknown `model` is 404 model_not_found.
std::variant<ParsedRequest, ApiError> parse_request(std::string_view body, Endpoint endpoint,
                                                    const ProtocolContext& ctx);

// Renders chat `messages` and `tools` (null: none) with the template and
// tokenizes the result through the ChatFormatter (tessera/chat.h:
// message text never becomes control tokens; BOS added unless the template
// wrote it). Errors are 400s with param "messages" (or "tools").
std::variant<ChatPrompt, ApiError> render_chat(const nlohmann::ordered_json& messages,
                                               const nlohmann::ordered_json& tools, const ProtocolContext& ctx);

}  // namespace tessera::server
