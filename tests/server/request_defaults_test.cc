// `tessera serve`'s sampling defaults (RequestDefaults): they fill the fields
// a request leaves out, and a field the request sets always wins.
#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "server/openai_protocol.h"

namespace tessera::server {
namespace {

ParsedRequest parse(std::string_view body, Endpoint endpoint, const ProtocolContext& ctx) {
  auto r = parse_request(body, endpoint, ctx);
  if (auto* e = std::get_if<ApiError>(&r)) ADD_FAILURE() << e->message;
  return std::holds_alternative<ParsedRequest>(r) ? std::get<ParsedRequest>(std::move(r)) : ParsedRequest{};
}

ProtocolContext context() {
  ProtocolContext ctx;
  ctx.n_vocab = 32;
  ctx.served_model = "m";
  ctx.context_tokens = 256;
  return ctx;
}

TEST(RequestDefaults, OpenAiValuesWhenUnset) {
  const ProtocolContext ctx = context();
  const ParsedRequest r = parse(R"({"prompt": [1, 2, 3]})", Endpoint::kCompletions, ctx);
  EXPECT_EQ(r.options.sampling.temperature, 1.0f);
  EXPECT_EQ(r.options.sampling.top_p, 1.0f);
  EXPECT_EQ(r.options.sampling.top_k, 0);
  EXPECT_EQ(r.options.sampling.min_p, 0.0f);
  EXPECT_EQ(r.options.sampling.repetition_penalty, 1.0f);
  EXPECT_EQ(r.options.max_tokens, 16);
}

TEST(RequestDefaults, FillWhatTheRequestLeavesOut) {
  ProtocolContext ctx = context();
  ctx.defaults.temperature = 0.25f;
  ctx.defaults.top_p = 0.75f;
  ctx.defaults.top_k = 40;
  ctx.defaults.min_p = 0.05f;
  ctx.defaults.repetition_penalty = 1.5f;
  ctx.defaults.max_tokens = 100;
  const ParsedRequest a = parse(R"({"prompt": [1, 2, 3]})", Endpoint::kCompletions, ctx);
  EXPECT_EQ(a.options.sampling.temperature, 0.25f);
  EXPECT_EQ(a.options.sampling.top_p, 0.75f);
  EXPECT_EQ(a.options.sampling.top_k, 40);
  EXPECT_EQ(a.options.sampling.min_p, 0.05f);
  EXPECT_EQ(a.options.sampling.repetition_penalty, 1.5f);
  EXPECT_EQ(a.options.max_tokens, 100);
  // The request's own values win, zeros included.
  const ParsedRequest b = parse(
      R"({"prompt": [1, 2, 3], "temperature": 0, "top_p": 1, "top_k": 0, "min_p": 0, "repetition_penalty": 1,
          "max_tokens": 5})",
      Endpoint::kCompletions, ctx);
  EXPECT_EQ(b.options.sampling.temperature, 0.0f);
  EXPECT_EQ(b.options.sampling.top_p, 1.0f);
  EXPECT_EQ(b.options.sampling.top_k, 0);
  EXPECT_EQ(b.options.sampling.min_p, 0.0f);
  EXPECT_EQ(b.options.sampling.repetition_penalty, 1.0f);
  EXPECT_EQ(b.options.max_tokens, 5);
}

TEST(RequestDefaults, MaxTokensDefaultIsShortenedToTheContext) {
  ProtocolContext ctx = context();
  ctx.context_tokens = 10;
  ctx.defaults.max_tokens = 100;
  // A default that does not fit is shortened (7 = 10 - 3 prompt tokens); an explicit one is a 400.
  EXPECT_EQ(parse(R"({"prompt": [1, 2, 3]})", Endpoint::kCompletions, ctx).options.max_tokens, 7);
  auto r = parse_request(R"({"prompt": [1, 2, 3], "max_tokens": 100})", Endpoint::kCompletions, ctx);
  ASSERT_TRUE(std::holds_alternative<ApiError>(r));
  EXPECT_EQ(std::get<ApiError>(r).code, "context_length_exceeded");
}

TEST(RequestDefaults, TopPZeroDefaultIsGreedy) {
  ProtocolContext ctx = context();
  ctx.defaults.top_p = 0.0f;
  const ParsedRequest r = parse(R"({"prompt": [1, 2, 3]})", Endpoint::kCompletions, ctx);
  EXPECT_EQ(r.options.sampling.temperature, 0.0f);
  EXPECT_EQ(r.options.sampling.top_p, 1.0f);
}

// An open lower bound holds for the value as stored: 1e-50 is 0 as a float,
// so typical_p / repetition_penalty 1e-50 are 400s naming the field.
TEST(RequestDefaults, OpenLowerBoundChecksTheStoredFloat) {
  const ProtocolContext ctx = context();
  for (const char* key : {"typical_p", "repetition_penalty"}) {
    auto r =
        parse_request(std::string(R"({"prompt": [1, 2, 3], ")") + key + R"(": 1e-50})", Endpoint::kCompletions, ctx);
    ASSERT_TRUE(std::holds_alternative<ApiError>(r)) << key;
    EXPECT_EQ(std::get<ApiError>(r).status, 400);
    EXPECT_EQ(std::get<ApiError>(r).param, key);
  }
  const ParsedRequest ok = parse(R"({"prompt": [1, 2, 3], "typical_p": 1e-30})", Endpoint::kCompletions, ctx);
  EXPECT_EQ(ok.options.sampling.typical_p, 1e-30f);
}

}  // namespace
}  // namespace tessera::server
