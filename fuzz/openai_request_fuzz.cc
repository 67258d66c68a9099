// libFuzzer target for the server's request parsing (untrusted bodies from the
// network): the first input byte picks the endpoint (mod 4: /v1/completions,
// /v1/chat/completions, /tokenize, /detokenize), the rest is the body. The
// body goes through the same functions the server calls (parse_request,
// tokenize_reply, detokenize_reply; JSON -> internal request -> validation),
// with the stories260K vocabulary and a ChatML template for chat rendering
// and tokenization.
//
// Must hold, for any input: nothing throws, crashes or reads out of bounds;
// an error is a 4xx with an OpenAI error body ({"error": {"message": string,
// "type": string, "param": string|null, "code": string|null}}); a valid
// completion/chat request has every field within its documented range
// (openai_protocol.h) and passes GenerationOptions::validate; a 200 from
// /tokenize lists in-vocabulary ids and their count, one from /detokenize a
// string. A broken invariant calls std::abort() with a line on stderr.
//
// The vocabulary is read from $TESSERA_FUZZ_VOCAB, else
// $TESSERA_SHARED_DIR/models/stories260K.gguf, else
// ../shared/models/stories260K.gguf (missing: exit 1, or 77 = skipped with
// TESSERA_SKIP_MISSING_DATA=1).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "server/openai_protocol.h"
#include "server/reply.h"
#include "server/tokenize_routes.h"
#include "tessera/chat.h"
#include "tessera/vocab.h"

namespace {

using tessera::server::ApiError;
using tessera::server::ParsedRequest;
using tessera::server::ProtocolContext;
using tessera::server::Reply;

constexpr int64_t kContext = 256;  // small, so max_tokens meets the context check often

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "openai_request_fuzz: invariant broken: %s\n", what);
  std::abort();
}
void check(bool ok, const char* what) {
  if (!ok) fail(what);
}

struct Fixture {
  std::unique_ptr<tessera::Vocab> vocab;
  std::unique_ptr<tessera::ChatFormatter> chat;
  ProtocolContext ctx;
};

std::string vocab_path() {
  if (const char* p = std::getenv("TESSERA_FUZZ_VOCAB")) return p;
  if (const char* d = std::getenv("TESSERA_SHARED_DIR")) return std::string(d) + "/models/stories260K.gguf";
  return "../shared/models/stories260K.gguf";
}

const Fixture& fixture() {
  static const Fixture* f = [] {
    auto* x = new Fixture;
    const std::string path = vocab_path();
    auto v = tessera::Vocab::load(path);
    if (!v.ok()) {
      std::fprintf(stderr, "openai_request_fuzz: cannot load the vocabulary %s: %s\n", path.c_str(),
                   v.status().message().c_str());
      const char* skip = std::getenv("TESSERA_SKIP_MISSING_DATA");
      std::exit(skip && std::string_view(skip) == "1" ? 77 : 1);  // 77: ctest's skip code
    }
    x->vocab = std::move(*v);
    auto c = tessera::ChatFormatter::create(
        *x->vocab,
        "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% endfor %}{% if tools %}{{ tools | tojson }}{% endif %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}");
    if (!c.ok()) {
      std::fprintf(stderr, "openai_request_fuzz: template: %s\n", c.status().message().c_str());
      std::exit(1);
    }
    x->chat = std::move(*c);
    x->ctx.vocab = x->vocab.get();
    x->ctx.n_vocab = x->vocab->size();
    x->ctx.served_model = "stories260K";
    x->ctx.chat = x->chat.get();
    x->ctx.context_tokens = kContext;
    return x;
  }();
  return *f;
}

bool null_or_string(const nlohmann::json& j) {
  return j.is_null() || j.is_string();
}

// The error's status and OpenAI body shape.
void check_error(const ApiError& e) {
  check(e.status >= 400 && e.status < 500, "an input error is a 4xx");
  check(!e.message.empty() && !e.type.empty(), "an error has a message and a type");
  const nlohmann::json body = tessera::server::api_error_body(e);
  const std::string text = tessera::server::dump_json(body);
  const auto back = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  check(back.is_object() && back.size() == 1 && back.contains("error"), "the error body is {\"error\": {...}}");
  const auto& o = back["error"];
  check(o.is_object() && o.contains("message") && o["message"].is_string(), "error.message is a string");
  check(o.contains("type") && o["type"].is_string(), "error.type is a string");
  check(o.contains("param") && null_or_string(o["param"]), "error.param is a string or null");
  check(o.contains("code") && null_or_string(o["code"]), "error.code is a string or null");
}

bool in(double v, double lo, double hi) {
  return std::isfinite(v) && v >= lo && v <= hi;
}

void check_request(const ParsedRequest& r, tessera::server::Endpoint endpoint, const ProtocolContext& ctx) {
  const auto& o = r.options;
  const auto& s = o.sampling;
  check(r.endpoint == endpoint, "the endpoint is the one asked");
  check(r.model == ctx.served_model, "model is the served model");
  check(!r.prompts.empty(), "a request has a prompt");
  if (endpoint == tessera::server::Endpoint::kChat) check(r.prompts.size() == 1, "chat has one prompt");
  if (endpoint == tessera::server::Endpoint::kCompletions)
    check(r.prompt_texts.size() == r.prompts.size(), "one prompt text per prompt");
  size_t longest = 0;
  for (const auto& p : r.prompts) {
    check(!p.empty(), "no prompt is empty");
    for (int32_t id : p) check(id >= 0 && id < ctx.n_vocab, "prompt ids are in the vocabulary");
    longest = std::max(longest, p.size());
  }
  check(in(s.temperature, 0, static_cast<double>(1e30f)), "temperature in [0, 1e30]");
  check(in(s.top_p, 0, 1) && s.top_p > 0, "top_p in (0, 1]");
  check(s.top_k >= 0, "top_k >= 0");
  check(in(s.min_p, 0, 1), "min_p in [0, 1]");
  check(in(s.typical_p, 0, 1) && s.typical_p > 0, "typical_p in (0, 1]");
  check(in(s.presence_penalty, -2, 2) && in(s.frequency_penalty, -2, 2), "penalties in [-2, 2]");
  check(in(s.repetition_penalty, 0, 100) && s.repetition_penalty > 0, "repetition_penalty in (0, 100]");
  for (const auto& [id, bias] : s.logit_bias) {
    check(id >= 0 && id < ctx.n_vocab, "logit_bias ids are in the vocabulary");
    check(in(bias, -100, 100), "logit_bias values in [-100, 100]");
  }
  check(o.n >= 1 && o.n <= 128, "n in [1, 128]");
  check(o.max_tokens >= -1, "max_tokens >= -1");
  if (endpoint == tessera::server::Endpoint::kCompletions) check(o.max_tokens >= 0, "completions max_tokens >= 0");
  const int64_t room = kContext - static_cast<int64_t>(longest);
  if (room > 0) check(o.max_tokens <= room, "max_tokens fits the context after the prompt");
  check(o.min_tokens >= 0 && (o.max_tokens < 0 || o.min_tokens <= o.max_tokens), "0 <= min_tokens <= max_tokens");
  check(o.stop.size() <= tessera::kMaxStopStrings, "at most kMaxStopStrings stop strings");
  for (const auto& st : o.stop) check(!st.empty(), "stop strings are not empty");
  check(o.logprobs >= -1 && o.logprobs <= tessera::kMaxTopLogprobs, "logprobs in [-1, 20]");
  check(r.prompt_logprobs >= -1 && r.prompt_logprobs <= tessera::kMaxTopLogprobs, "prompt_logprobs in [-1, 20]");
  if (r.scores_prompt()) check(o.n == 1 && o.prompt_logits, "scoring the prompt needs n = 1 and prompt logits");
  if (endpoint == tessera::server::Endpoint::kChat && r.prompt_logprobs >= 0)
    check(!r.stream, "chat prompt_logprobs is not streamed");
  if (endpoint == tessera::server::Endpoint::kChat) check(!r.echo, "chat has no echo");
  check(o.validate(ctx.n_vocab).ok(), "a parsed request passes GenerationOptions::validate");
}

nlohmann::json reply_json(const Reply& r) {
  check(r.content_type == "application/json", "replies are JSON");
  auto j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  check(!j.is_discarded(), "the reply body is JSON");
  return j;
}

void check_error_reply(const Reply& r) {
  check(r.status >= 400 && r.status < 500, "an input error is a 4xx");
  const auto j = reply_json(r);
  check(j.is_object() && j.contains("error") && j["error"].is_object(), "the error body is {\"error\": {...}}");
  const auto& o = j["error"];
  check(o.contains("message") && o["message"].is_string() && o.contains("type") && o["type"].is_string(),
        "error.message and error.type are strings");
  check(o.contains("param") && null_or_string(o["param"]) && o.contains("code") && null_or_string(o["code"]),
        "error.param and error.code are strings or null");
}

void check_tokenize(const Reply& r, const ProtocolContext& ctx) {
  if (r.status != 200) return check_error_reply(r);
  const auto j = reply_json(r);
  check(j.is_object() && j.contains("tokens") && j["tokens"].is_array(), "tokenize answers tokens");
  for (const auto& t : j["tokens"])
    check(t.is_number_integer() && t.get<int64_t>() >= 0 && t.get<int64_t>() < ctx.n_vocab,
          "tokenize ids are in the vocabulary");
  check(j.contains("count") && j["count"] == j["tokens"].size(), "count is the number of tokens");
  check(j.contains("max_model_len") && j["max_model_len"] == kContext, "max_model_len is the context");
}

void check_detokenize(const Reply& r) {
  if (r.status != 200) return check_error_reply(r);
  const auto j = reply_json(r);
  check(j.is_object() && j.contains("prompt") && j["prompt"].is_string(), "detokenize answers a prompt string");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Fixture& f = fixture();
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
    case 1: {
      const auto endpoint =
          data[0] % 4 == 0 ? tessera::server::Endpoint::kCompletions : tessera::server::Endpoint::kChat;
      auto r = tessera::server::parse_request(body, endpoint, f.ctx);
      if (auto* e = std::get_if<ApiError>(&r)) {
        check_error(*e);
      } else {
        check_request(std::get<ParsedRequest>(r), endpoint, f.ctx);
      }
      break;
    }
    case 2:
      check_tokenize(tessera::server::tokenize_reply(body, f.ctx, kContext), f.ctx);
      break;
    default:
      check_detokenize(tessera::server::detokenize_reply(body, f.ctx));
      break;
  }
  return 0;
}
