// POST /tokenize and POST /detokenize (as in vLLM's server): request body ->
// reply, with no engine state beyond the protocol context, so the request
// fuzzer (fuzz/openai_request_fuzz.cc) drives the same code as the server.
#pragma once

#include <cstdint>
#include <string_view>

#include "server/openai_protocol.h"
#include "server/reply.h"

namespace tessera::server {

// {"prompt": str, "add_special_tokens"?: bool} or {"messages": [...],
// "tools"?: [...]} (rendered with the chat template, the ids the model would
// receive) -> 200 {"tokens", "count", "max_model_len"}; errors are 4xx
// OpenAI error bodies.
Reply tokenize_reply(std::string_view body, const ProtocolContext& ctx, int64_t max_model_len);
// {"tokens": [ids in [0, n_vocab)]} -> 200 {"prompt": text}; errors are 400s.
Reply detokenize_reply(std::string_view body, const ProtocolContext& ctx);

}  // namespace tessera::server
