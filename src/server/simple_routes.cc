#include "server/simple_routes.h"

#include <chrono>

#include "server/completion_job.h"
#include "server/tokenize_routes.h"

namespace tessera::server {

using nlohmann::json;

namespace {

json models(const ServerState& s) {
  static const int64_t created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return {{"object", "list"},
          {"data", json::array({{{"id", s.protocol.served_model},
                                 {"object", "model"},
                                 {"created", created},
                                 {"owned_by", "tessera"},
                                 {"max_model_len", s.engine->model_info().context}}})}};
}

}  // namespace

std::optional<Reply> handle_simple_route(std::string_view method, std::string_view path, std::string_view body,
                                         ServerState& state) {
  if (path == "/health") {
    if (state.stopping.load()) return Reply{503, R"({"status":"stopping"})", "application/json", {}};
    return Reply{200, R"({"status":"ok"})", "application/json", {}};
  }
  if (path == "/metrics") {
    const int64_t blocks = state.engine->kv_cache_info().num_blocks;
    return Reply{
        200, state.metrics.render(state.engine->metrics(), blocks), "text/plain; version=0.0.4; charset=utf-8", {}};
  }
  if (path == "/v1/models" && method == "GET") return json_reply(models(state));
  if (path == "/tokenize" && method == "POST")
    return tokenize_reply(body, state.protocol, state.engine->model_info().context);
  if (path == "/detokenize" && method == "POST") return detokenize_reply(body, state.protocol);
  return std::nullopt;
}

}  // namespace tessera::server
