#include "server/simple_routes.h"

#include <chrono>

#include "server/completion_job.h"

namespace tessera::server {

using nlohmann::json;

Reply error_reply(const ApiError& e) {
  Reply r{e.status, dump_json(api_error_body(e)), "application/json", {}};
  if (e.status == 429) r.headers.emplace_back("Retry-After", "1");
  return r;
}

namespace {

Reply json_reply(const json& j) { return Reply{200, dump_json(j), "application/json", {}}; }

std::optional<nlohmann::ordered_json> parse_object(std::string_view body, Reply& err) {
  auto j = parse_json_object(body);
  if (auto* e = std::get_if<ApiError>(&j)) {
    err = error_reply(*e);
    return std::nullopt;
  }
  return std::move(std::get<nlohmann::ordered_json>(j));
}

Reply tokenize(std::string_view body, ServerState& s) {
  Reply err;
  auto j = parse_object(body, err);
  if (!j) return err;
  if (!s.protocol.vocab) return error_reply(bad_request("this model has no tokenizer"));
  std::vector<int32_t> ids;
  if (auto m = j->find("messages"); m != j->end()) {
    auto t = j->find("tools");
    auto r = render_chat(*m, t != j->end() ? *t : nlohmann::ordered_json(), s.protocol);
    if (auto* e = std::get_if<ApiError>(&r)) return error_reply(*e);
    ids = std::move(std::get<ChatPrompt>(r).tokens);
  } else {
    auto p = j->find("prompt");
    if (p == j->end() || !p->is_string()) return error_reply(bad_request("prompt must be a string", "prompt"));
    bool add_special = true;
    if (auto a = j->find("add_special_tokens"); a != j->end()) {
      if (!a->is_boolean()) return error_reply(bad_request("add_special_tokens must be a boolean", "add_special_tokens"));
      add_special = a->get<bool>();
    }
    ids = s.protocol.vocab->encode(p->get<std::string>(), add_special);
  }
  return json_reply({{"tokens", ids}, {"count", ids.size()}, {"max_model_len", s.engine->model_info().context}});
}

Reply detokenize(std::string_view body, ServerState& s) {
  Reply err;
  auto j = parse_object(body, err);
  if (!j) return err;
  if (!s.protocol.vocab) return error_reply(bad_request("this model has no tokenizer"));
  auto t = j->find("tokens");
  if (t == j->end() || !t->is_array()) return error_reply(bad_request("tokens must be an array of token ids", "tokens"));
  std::vector<int32_t> ids;
  for (const auto& v : *t) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= s.protocol.n_vocab) {
      return error_reply(bad_request("tokens must be token ids in [0, " + std::to_string(s.protocol.n_vocab) + ")", "tokens"));
    }
    ids.push_back(v.get<int32_t>());
  }
  auto text = s.protocol.vocab->decode(ids);  // ids checked above
  if (!text.ok()) return error_reply(bad_request(text.status().message(), "tokens"));
  return json_reply({{"prompt", *text}});
}

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
    return Reply{200, state.metrics.render(state.engine->metrics(), blocks), "text/plain; version=0.0.4; charset=utf-8", {}};
  }
  if (path == "/v1/models" && method == "GET") return json_reply(models(state));
  if (path == "/tokenize" && method == "POST") return tokenize(body, state);
  if (path == "/detokenize" && method == "POST") return detokenize(body, state);
  return std::nullopt;
}

}  // namespace tessera::server
