// OpenAI API requests (https://platform.openai.com/docs/api-reference/completions
// and /chat) parsed into engine requests, with OpenAI-style errors
// (`{"error": {"message", "type", "param", "code"}}`).
#pragma once

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

// What the parser needs to know about the served model.
struct ProtocolContext {
  const Vocab* vocab = nullptr;  // null: token-id prompts only
  int32_t n_vocab = 0;
  std::string served_model;                     // the `model` name clients must use
  const ChatFormatter* chat = nullptr;          // the chat template; null: chat is refused
};

// A parsed completion or chat request.
struct ParsedRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;
  std::vector<std::vector<int32_t>> prompts;  // one engine request each (completions may batch prompts)
  GenerationOptions options;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool chat_logprobs = false;  // chat: `logprobs: true`
};

// Parses `body` (JSON text) for `endpoint`. Defaults follow the OpenAI
// reference: temperature 1, top_p 1, no top-k / min-p, max_tokens 16 for
// completions and "until the context is full" for chat, a random seed.
// Unknown fields are ignored; wrong types and out-of-range values are 400
// errors naming the field; an unknown `model` is 404 model_not_found.
std::variant<ParsedRequest, ApiError> parse_request(std::string_view body, Endpoint endpoint,
                                                    const ProtocolContext& ctx);

// Renders chat `messages` (system / user / assistant / tool; content a string
// or an array of {"type": "text", "text"} parts) with the template and
// tokenizes the result (BOS added unless the template wrote it).
std::variant<std::vector<int32_t>, ApiError> render_chat(const nlohmann::json& messages, const ProtocolContext& ctx);

}  // namespace tessera::server
