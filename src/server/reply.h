// An HTTP answer ready to send (status, body, content type, extra headers)
// and the JSON helpers every route uses to build one.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "server/openai_protocol.h"

namespace tessera::server {

struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

// An OpenAI error body with its status (and Retry-After for 429).
Reply error_reply(const ApiError& e);
// A 200 with `j` as its body.
Reply json_reply(const nlohmann::json& j);

// Dumps JSON replacing invalid UTF-8 (generated text may hold any bytes).
std::string dump_json(const nlohmann::json& j);
std::string dump_json(const nlohmann::ordered_json& j);

}  // namespace tessera::server
