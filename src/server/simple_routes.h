// The endpoints answered at once, without the engine's step loop:
// GET /health, GET /metrics, GET /v1/models, POST /tokenize, POST /detokenize
// (the last two as in vLLM's server).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/http_server.h"

namespace tessera::server {

// An HTTP answer ready to send.
struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

// An OpenAI error body with its status (and Retry-After for 429).
Reply error_reply(const ApiError& e);

// Answers `method path` when it is one of the simple endpoints; nullopt otherwise.
std::optional<Reply> handle_simple_route(std::string_view method, std::string_view path, std::string_view body,
                                         ServerState& state);

}  // namespace tessera::server
