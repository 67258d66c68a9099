#include "server/tokenize_routes.h"

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tessera::server {

namespace {

std::optional<nlohmann::ordered_json> parse_object(std::string_view body, Reply& err) {
  auto j = parse_json_object(body);
  if (auto* e = std::get_if<ApiError>(&j)) {
    err = error_reply(*e);
    return std::nullopt;
  }
  return std::move(std::get<nlohmann::ordered_json>(j));
}

}  // namespace

Reply tokenize_reply(std::string_view body, const ProtocolContext& ctx, int64_t max_model_len) {
  Reply err;
  auto j = parse_object(body, err);
  if (!j) return err;
  if (!ctx.vocab) return error_reply(bad_request("this model has no tokenizer"));
  std::vector<int32_t> ids;
  if (auto m = j->find("messages"); m != j->end()) {
    auto t = j->find("tools");
    auto r = render_chat(*m, t != j->end() ? *t : nlohmann::ordered_json(), ctx);
    if (auto* e = std::get_if<ApiError>(&r)) return error_reply(*e);
    ids = std::move(std::get<ChatPrompt>(r).tokens);
  } else {
    auto p = j->find("prompt");
    if (p == j->end() || !p->is_string()) return error_reply(bad_request("prompt must be a string", "prompt"));
    bool add_special = true;
    if (auto a = j->find("add_special_tokens"); a != j->end()) {
      if (!a->is_boolean())
        return error_reply(bad_request("add_special_tokens must be a boolean", "add_special_tokens"));
      add_special = a->get<bool>();
    }
    ids = ctx.vocab->encode(p->get<std::string>(), add_special);
  }
  return json_reply({{"tokens", ids}, {"count", ids.size()}, {"max_model_len", max_model_len}});
}

Reply detokenize_reply(std::string_view body, const ProtocolContext& ctx) {
  Reply err;
  auto j = parse_object(body, err);
  if (!j) return err;
  if (!ctx.vocab) return error_reply(bad_request("this model has no tokenizer"));
  auto t = j->find("tokens");
  if (t == j->end() || !t->is_array())
    return error_reply(bad_request("tokens must be an array of token ids", "tokens"));
  std::vector<int32_t> ids;
  for (const auto& v : *t) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= ctx.n_vocab) {
      return error_reply(bad_request("tokens must be token ids in [0, " + std::to_string(ctx.n_vocab) + ")", "tokens"));
    }
    ids.push_back(v.get<int32_t>());
  }
  auto text = ctx.vocab->decode(ids);  // ids checked above
  if (!text.ok()) return error_reply(bad_request(text.status().message(), "tokens"));
  return json_reply({{"prompt", *text}});
}

}  // namespace tessera::server
