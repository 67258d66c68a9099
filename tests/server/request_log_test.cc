// The request log's two line formats (exact text at a fixed time), and
// X-Request-Id validation and generation.
#include "server/request_log.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>

#include "server/request_id.h"

namespace tessera::server {
namespace {

// 2026-12-01T19:08:33.250Z
const std::chrono::system_clock::time_point kTime{std::chrono::milliseconds(1796152113250)};

RequestLogRecord completion() {
  RequestLogRecord r;
  r.request_id = "client-7";
  r.method = "POST";
  r.path = "/v1/completions";
  r.status = 200;
  r.prompt_tokens = 41;
  r.cached_tokens = 32;
  r.generated_tokens = 8;
  r.ttft_ms = 12.345;
  r.e2e_ms = 30.06;
  r.finish_reason = "length,stop";
  return r;
}

TEST(RequestLog, TextLine) {
  EXPECT_EQ(format_request_log(completion(), RequestLogFormat::kText, kTime),
            "2026-12-01T19:08:33.250Z request id=client-7 \"POST /v1/completions\" 200 prompt=41 cached=32 "
            "generated=8 ttft_ms=12.3 e2e_ms=30.1 finish=length,stop");
  RequestLogRecord e;
  e.request_id = "0123456789abcdef";
  e.method = "GET";
  e.path = "/nowhere";
  e.status = 404;
  e.e2e_ms = 0.04;
  EXPECT_EQ(format_request_log(e, RequestLogFormat::kText, kTime),
            "2026-12-01T19:08:33.250Z request id=0123456789abcdef \"GET /nowhere\" 404 prompt=0 cached=0 "
            "generated=0 ttft_ms=- e2e_ms=0.0 finish=-");
}

TEST(RequestLog, JsonLine) {
  EXPECT_EQ(format_request_log(completion(), RequestLogFormat::kJson, kTime),
            R"({"time":"2026-12-01T19:08:33.250Z","request_id":"client-7","method":"POST","path":"/v1/completions",)"
            R"("status":200,"prompt_tokens":41,"cached_tokens":32,"generated_tokens":8,"ttft_ms":12.3,)"
            R"("e2e_ms":30.1,"finish_reason":"length,stop"})");
  RequestLogRecord e = completion();
  e.request_id = R"(a"b\c)";  // visible ASCII that JSON must escape
  e.ttft_ms.reset();
  e.finish_reason.clear();
  const auto j = nlohmann::json::parse(format_request_log(e, RequestLogFormat::kJson, kTime));
  EXPECT_EQ(j["request_id"], R"(a"b\c)");
  EXPECT_TRUE(j["ttft_ms"].is_null());
  EXPECT_TRUE(j["finish_reason"].is_null());
}

TEST(RequestId, Validation) {
  EXPECT_TRUE(valid_request_id("abc-123_X:/.~"));
  EXPECT_TRUE(valid_request_id(std::string(kMaxRequestIdLength, 'x')));
  EXPECT_FALSE(valid_request_id(std::string(kMaxRequestIdLength + 1, 'x')));
  EXPECT_FALSE(valid_request_id(""));
  EXPECT_FALSE(valid_request_id("two words"));
  EXPECT_FALSE(valid_request_id("tab\there"));
  EXPECT_FALSE(valid_request_id("caf\xC3\xA9"));
}

TEST(RequestId, GeneratedIdsAreDistinctHex) {
  RequestIdGenerator a(0), c;
  std::set<std::string> seen;
  std::string first;
  for (int i = 0; i < 10000; ++i) {
    const std::string id = a.next();
    ASSERT_EQ(id.size(), 16u);
    ASSERT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    ASSERT_TRUE(valid_request_id(id));
    ASSERT_TRUE(seen.insert(id).second) << id;
    if (i == 0) first = id;
  }
  EXPECT_EQ(RequestIdGenerator(0).next(), first);  // the base alone decides the sequence
  EXPECT_NE(first, RequestIdGenerator(1).next());
  EXPECT_EQ(c.next().size(), 16u);
}

}  // namespace
}  // namespace tessera::server
