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
#include "server/reply.h"

namespace tessera::server {

// Answers `method path` when it is one of the simple endpoints; nullopt otherwise.
std::optional<Reply> handle_simple_route(std::string_view method, std::string_view path, std::string_view body,
                                         ServerState& state);

}  // namespace tessera::server
