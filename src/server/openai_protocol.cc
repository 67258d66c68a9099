#include "server/openai_protocol.h"

#include <cfloat>
#include <cmath>
#include <random>
#include <set>

#include "tessera/logprobs.h"

namespace tessera::server {

using nlohmann::json;

nlohmann::json api_error_body(const ApiError& e) {
  return {{"error",
           {{"message", e.message},
            {"type", e.type},
            {"param", e.param.empty() ? json(nullptr) : json(e.param)},
            {"code", e.code.empty() ? json(nullptr) : json(e.code)}}}};
}

ApiError bad_request(std::string message, std::string param, std::string code) {
  return ApiError{400, std::move(message), "invalid_request_error", std::move(param), std::move(code)};
}

ApiError status_error(const Status& st, std::string param) {
  switch (st.code()) {
    case StatusCode::kOutOfRange:
      return bad_request(st.message(), std::move(param), "context_length_exceeded");
    case StatusCode::kInvalidArgument:
      return bad_request(st.message(), std::move(param));
    case StatusCode::kResourceExhausted:
      return ApiError{429, st.message(), "rate_limit_error", {}, "queue_full"};
    default:
      return ApiError{500, st.message(), "server_error", {}, {}};
  }
}

using Json = nlohmann::ordered_json;

namespace {

// Reads typed, range-checked fields; the first problem wins.
class FieldReader {
 public:
  explicit FieldReader(const Json& body) : body_(body) {}
  const Json* get(const char* key) const {
    auto it = body_.find(key);
    return it == body_.end() || it->is_null() ? nullptr : &*it;
  }
  void fail(std::string message, const char* param) {
    if (!error) error = bad_request(std::move(message), param);
  }
  // A number in [lo, hi] (lo excluded when lo_open).
  void number(const char* key, float& out, double lo, double hi, bool lo_open = false) {
    const Json* v = get(key);
    if (!v) return;
    if (!v->is_number()) return fail(std::string(key) + " must be a number", key);
    const double d = v->get<double>();
    // lo_open: the value as stored (float) must differ from lo too (1e-50 is 0 as a float).
    if (!std::isfinite(d) || d < lo || d > hi || (lo_open && static_cast<float>(d) == static_cast<float>(lo))) {
      // No upper bound (DBL_MAX): "a finite number >= lo", not DBL_MAX's 17 digits.
      const std::string range =
          hi == DBL_MAX
              ? std::string(" must be a finite number ") + (lo_open ? "> " : ">= ") + Json(lo).dump()
              : std::string(" must be in ") + (lo_open ? "(" : "[") + Json(lo).dump() + ", " + Json(hi).dump() + "]";
      return fail(std::string(key) + range + ", got " + v->dump(), key);
    }
    out = static_cast<float>(d);
  }
  void integer(const char* key, int32_t& out, int64_t lo, int64_t hi) {
    const Json* v = get(key);
    if (!v) return;
    if (!v->is_number_integer()) return fail(std::string(key) + " must be an integer", key);
    const auto i = v->get<int64_t>();
    if (i < lo || i > hi) {
      return fail(std::string(key) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                      std::to_string(i),
                  key);
    }
    out = static_cast<int32_t>(i);
  }
  void boolean(const char* key, bool& out) {
    const Json* v = get(key);
    if (!v) return;
    if (!v->is_boolean()) return fail(std::string(key) + " must be a boolean", key);
    out = v->get<bool>();
  }
  std::optional<ApiError> error;

 private:
  const Json& body_;
};

// A token-id array, checked against the vocabulary.
std::optional<std::vector<int32_t>> token_ids(const Json& a, int32_t n_vocab, FieldReader& r) {
  std::vector<int32_t> ids;
  for (const auto& v : a) {
    if (!v.is_number_integer()) return r.fail("prompt token ids must be integers", "prompt"), std::nullopt;
    const auto id = v.get<int64_t>();
    if (id < 0 || id >= n_vocab) {
      r.fail(
          "prompt token " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(n_vocab) + " tokens)",
          "prompt");
      return std::nullopt;
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  if (ids.empty()) return r.fail("prompt must not be empty", "prompt"), std::nullopt;
  return ids;
}

void parse_prompt(const Json& p, const ProtocolContext& ctx, ParsedRequest& out, FieldReader& r) {
  auto encode = [&](const std::string& s) {
    if (!ctx.vocab) return r.fail("this model has no tokenizer; send token ids", "prompt");
    // "" is a prompt, as in OpenAI's API and `tessera run -p ""`: generation
    // starts from the BOS token the model adds. Without one nothing is left.
    std::vector<int32_t> ids = ctx.vocab->encode(s, /*add_special=*/true);
    if (ids.empty())
      return r.fail("prompt must not be empty (this model adds no BOS token to an empty text)", "prompt");
    out.prompts.push_back(std::move(ids));
    out.prompt_texts.push_back(s);
  };
  auto ids_prompt = [&](std::vector<int32_t> ids) {
    auto text = ctx.vocab ? ctx.vocab->decode(ids) : Result<std::string>(std::string());
    out.prompt_texts.push_back(text.ok() ? *text : std::string());
    out.prompts.push_back(std::move(ids));
  };
  if (p.is_string()) return encode(p.get<std::string>());
  if (!p.is_array() || p.empty()) return r.fail("prompt must be a string, an array of strings or token ids", "prompt");
  if (p[0].is_number_integer()) {
    if (auto ids = token_ids(p, ctx.n_vocab, r)) ids_prompt(std::move(*ids));
    return;
  }
  for (const auto& item : p) {
    if (item.is_string()) {
      encode(item.get<std::string>());
    } else if (item.is_array()) {
      if (auto ids = token_ids(item, ctx.n_vocab, r)) ids_prompt(std::move(*ids));
    } else {
      return r.fail("prompt must be a string, an array of strings or token ids", "prompt");
    }
    if (r.error) return;
  }
}

void parse_stop(const Json* s, GenerationOptions& o, FieldReader& r) {
  if (!s) return;
  if (s->is_string()) {
    o.stop.push_back(s->get<std::string>());
  } else if (s->is_array()) {
    for (const auto& v : *s) {
      if (!v.is_string()) return r.fail("stop must be a string or an array of strings", "stop");
      o.stop.push_back(v.get<std::string>());
    }
  } else {
    return r.fail("stop must be a string or an array of strings", "stop");
  }
  if (o.stop.size() > kMaxStopStrings) {
    return r.fail("at most " + std::to_string(kMaxStopStrings) + " stop strings are allowed, got " +
                      std::to_string(o.stop.size()),
                  "stop");
  }
  for (const auto& st : o.stop) {
    if (st.empty()) return r.fail("stop strings must not be empty", "stop");
  }
}

void parse_logit_bias(const Json* b, int32_t n_vocab, SamplingParams& s, FieldReader& r) {
  if (!b) return;
  if (!b->is_object()) return r.fail("logit_bias must be an object of token id -> bias", "logit_bias");
  for (const auto& [key, value] : b->items()) {
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(key, &used);
    } catch (...) {
      used = 0;
    }
    if (used != key.size() || key.empty())
      return r.fail("logit_bias key '" + key + "' is not a token id", "logit_bias");
    if (id < 0 || id >= n_vocab) {
      return r.fail("logit_bias token " + key + " is outside the vocabulary (" + std::to_string(n_vocab) + " tokens)",
                    "logit_bias");
    }
    if (!value.is_number() || !std::isfinite(value.get<double>()) || std::fabs(value.get<double>()) > 100) {
      return r.fail("logit_bias values must be numbers in [-100, 100]", "logit_bias");
    }
    s.logit_bias.emplace_back(static_cast<int32_t>(id), value.get<float>());
  }
}

void parse_sampling(FieldReader& r, const Json& body, const ProtocolContext& ctx, ParsedRequest& out) {
  GenerationOptions& o = out.options;
  SamplingParams& s = o.sampling;
  s.temperature = ctx.defaults.temperature;
  s.top_p = ctx.defaults.top_p;
  s.top_k = ctx.defaults.top_k;
  s.min_p = ctx.defaults.min_p;
  s.repetition_penalty = ctx.defaults.repetition_penalty;
  double temperature = s.temperature;
  if (const Json* t = r.get("temperature"); t && t->is_number()) temperature = t->get<double>();
  r.number("temperature", s.temperature, 0, DBL_MAX);
  // Past float range the distribution is uniform to float precision anyway.
  if (std::isfinite(temperature) && temperature > 1e30) s.temperature = 1e30f;
  r.number("top_p", s.top_p, 0, 1);
  if (s.top_p == 0.0f) {  // OpenAI: top_p 0 keeps only the most likely token
    s.top_p = 1.0f;
    s.temperature = 0.0f;
  }
  r.integer("top_k", s.top_k, -1, INT32_MAX);
  if (s.top_k < 0) s.top_k = 0;
  r.number("min_p", s.min_p, 0, 1);
  r.number("typical_p", s.typical_p, 0, 1, true);
  r.number("presence_penalty", s.presence_penalty, -2, 2);
  r.number("frequency_penalty", s.frequency_penalty, -2, 2);
  r.number("repetition_penalty", s.repetition_penalty, 0, 100, true);
  parse_logit_bias(r.get("logit_bias"), ctx.n_vocab, s, r);
  const Json* seed = r.get("seed");
  if (seed && !seed->is_number_integer()) return r.fail("seed must be an integer", "seed");
  if (seed && !(seed->is_number_integer() && !seed->is_number_unsigned() && seed->get<int64_t>() == -1)) {
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  } else {  // absent or -1: random
    s.seed = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  }
  parse_stop(r.get("stop"), o, r);
  r.integer("n", o.n, 1, 128);
  r.boolean("ignore_eos", o.ignore_eos);
  // tessera extension: false opts this request out of the server's speculative decoding.
  r.boolean("speculative", o.speculative);
  r.integer("min_tokens", o.min_tokens, 0, INT32_MAX);
  (void)body;
}

void parse_max_tokens(FieldReader& r, const ProtocolContext& ctx, ParsedRequest& out) {
  GenerationOptions& o = out.options;
  o.max_tokens = ctx.defaults.max_tokens ? *ctx.defaults.max_tokens : out.endpoint == Endpoint::kCompletions ? 16 : -1;
  const char* key = r.get("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  r.integer(key, o.max_tokens, 0, INT32_MAX);
  if (!r.error && o.max_tokens >= 0 && o.min_tokens > o.max_tokens)
    r.fail("min_tokens must not exceed max_tokens", "min_tokens");
}

void parse_logprobs(FieldReader& r, ParsedRequest& out) {
  if (out.endpoint == Endpoint::kCompletions) {
    r.integer("logprobs", out.options.logprobs, 0, kMaxTopLogprobs);
    return;
  }
  r.boolean("logprobs", out.chat_logprobs);
  int32_t top = 0;
  r.integer("top_logprobs", top, 0, kMaxTopLogprobs);
  if (r.get("top_logprobs") && !out.chat_logprobs)
    return r.fail("top_logprobs requires logprobs: true", "top_logprobs");
  if (out.chat_logprobs) out.options.logprobs = top;
}

}  // namespace

std::variant<ChatPrompt, ApiError> render_chat(const Json& messages, const Json& tools, const ProtocolContext& ctx) {
  if (!messages.is_array() || messages.empty()) return bad_request("messages must be a non-empty array", "messages");
  if (!tools.is_null() && !tools.is_array()) return bad_request("tools must be an array", "tools");
  if (!ctx.chat || !ctx.vocab) {
    return bad_request("this model has no chat template; start the server with --chat-template FILE", "messages");
  }
  // The strings came from parsed JSON, so they are valid UTF-8 and dump() cannot throw.
  auto prompt = ctx.chat->render(messages.dump(), tools.is_null() ? std::string() : tools.dump());
  if (!prompt.ok()) {
    if (prompt.status().code() == StatusCode::kResourceExhausted) {
      return ApiError{400, prompt.status().message(), "invalid_request_error", "messages", "chat_template_limit"};
    }
    return ApiError{400, prompt.status().message(), "invalid_request_error", "messages", {}};
  }
  return std::move(*prompt);
}

std::variant<Json, ApiError> parse_json_object(std::string_view body) {
  std::vector<std::set<std::string>> keys;  // of each open object
  std::string duplicate;
  Json::parser_callback_t check = [&](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == Json::parse_event_t::key && !keys.empty() && duplicate.empty()) {
      const std::string& k = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(k).second) duplicate = k;
    }
    return true;
  };
  Json j = Json::parse(body, check, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad_request("the body is not valid JSON (or not valid UTF-8)", {}, "invalid_json");
  if (!duplicate.empty()) {
    return bad_request("the body repeats the key '" + duplicate + "' in one object", {}, "invalid_json");
  }
  if (!j.is_object()) return bad_request("the body must be a JSON object", {}, "invalid_json");
  return j;
}

std::variant<ParsedRequest, ApiError> parse_request(std::string_view body, Endpoint endpoint,
                                                    const ProtocolContext& ctx) {
  auto body_json = parse_json_object(body);
  if (auto* e = std::get_if<ApiError>(&body_json)) return *e;
  const Json& j = std::get<Json>(body_json);
  ParsedRequest out;
  out.endpoint = endpoint;
  FieldReader r(j);
  if (const Json* m = r.get("model")) {
    if (!m->is_string()) return bad_request("model must be a string", "model");
    out.model = m->get<std::string>();
    if (out.model != ctx.served_model) {
      return ApiError{404,
                      "the model '" + out.model + "' does not exist; this server serves '" + ctx.served_model + "'",
                      "invalid_request_error", "model", "model_not_found"};
    }
  }
  out.model = ctx.served_model;
  parse_sampling(r, j, ctx, out);
  parse_max_tokens(r, ctx, out);
  parse_logprobs(r, out);
  r.boolean("stream", out.stream);
  if (const Json* so = r.get("stream_options")) {
    if (!so->is_object()) return bad_request("stream_options must be an object", "stream_options");
    FieldReader sr(*so);
    sr.boolean("include_usage", out.include_usage);
    if (sr.error) return *sr.error;
  }
  if (const Json* u = r.get("user"); u && !u->is_string()) r.fail("user must be a string", "user");
  if (r.error) return *r.error;
  if (endpoint == Endpoint::kCompletions) {
    const Json* p = r.get("prompt");
    if (!p) return bad_request("prompt is required", "prompt");
    parse_prompt(*p, ctx, out, r);
    r.boolean("echo", out.echo);
    r.integer("prompt_logprobs", out.prompt_logprobs, 0, kMaxTopLogprobs);
    if (!r.error && out.scores_prompt()) {
      if (out.options.n != 1) {
        return bad_request("echo with logprobs, and prompt_logprobs, need n = 1", "n");
      }
      out.options.prompt_logits = true;
    }
  } else {
    const Json* m = r.get("messages");
    if (!m) return bad_request("messages is required", "messages");
    const Json* tools = r.get("tools");
    auto chat = render_chat(*m, tools ? *tools : Json(), ctx);
    if (auto* e = std::get_if<ApiError>(&chat)) return *e;
    out.prompts.push_back(std::move(std::get<ChatPrompt>(chat).tokens));
    // vLLM's prompt_logprobs on chat: the rendered prompt's tokens, in the
    // (non-streamed) response next to `choices`.
    r.integer("prompt_logprobs", out.prompt_logprobs, 0, kMaxTopLogprobs);
    if (!r.error && out.prompt_logprobs >= 0) {
      if (out.stream)
        return bad_request("prompt_logprobs is not supported with stream on chat completions", "prompt_logprobs");
      if (out.options.n != 1) return bad_request("prompt_logprobs needs n = 1", "n");
      out.options.prompt_logits = true;
    }
  }
  if (r.error) return *r.error;
  // max_tokens against the room the context leaves after the longest prompt
  // (a prompt that fills the context on its own is the engine's 400).
  int64_t longest = 0;
  for (const auto& p : out.prompts) longest = std::max<int64_t>(longest, static_cast<int64_t>(p.size()));
  const int64_t room = ctx.context_tokens - longest;
  if (ctx.context_tokens > 0 && room > 0 && out.options.max_tokens > room) {
    const char* key = r.get("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (r.get(key)) {
      return bad_request(std::string(key) + " " + std::to_string(out.options.max_tokens) +
                             " does not fit: the prompt has " + std::to_string(longest) + " tokens and the context " +
                             std::to_string(ctx.context_tokens) + ", which leaves " + std::to_string(room),
                         key, "context_length_exceeded");
    }
    out.options.max_tokens = static_cast<int32_t>(room);  // the default is shortened to fit
    if (out.options.min_tokens > out.options.max_tokens) out.options.min_tokens = out.options.max_tokens;
  }
  if (Status st = out.options.validate(ctx.n_vocab); !st.ok()) return bad_request(st.message());
  return out;
}

}  // namespace tessera::server
