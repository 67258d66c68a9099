// The OpenAI-compatible server in-process on an ephemeral loopback port with
// stories260K: completions equal the engine's greedy output, SSE streaming,
// chat with a template, every error path, /metrics, cancellation on
// disconnect, /health and /metrics latency while the engine is saturated,
// and 64 concurrent streams.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>  // before Boost 1.74 asio, whose awaitable.hpp uses std::exchange without it
#include <vector>

#include "engine/vocab_impl.h"
#include "http_test_client.h"
#include "server/http_server.h"
#include "template/chat_prompt.h"
#include "test_support.h"

namespace tessera::server {
namespace {

using nlohmann::json;
using tessera::testing::http_request;
using tessera::testing::sse_data;

const char* kChatMl =
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = tessera::testing::shared_path("models/stories260K.gguf");
    if (!tessera::testing::file_exists(path)) return;
    EngineOptions cfg;
    cfg.model = path;
    cfg.ctx_size = 512;
    cfg.max_num_seqs = 128;
    auto e = Engine::create(cfg);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    engine_ = std::move(*e).release();
    engine_->start();
  }
  static void TearDownTestSuite() {
    if (engine_) engine_->stop();
    delete engine_;
    engine_ = nullptr;
  }
  void SetUp() override {
    TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
    (void)path;
  }
  void TearDown() override {
    if (server_) server_->stop(std::chrono::milliseconds(0));
    server_.reset();
  }
  uint16_t start(ServerConfig cfg = {}) {
    cfg.port = 0;
    cfg.served_model_name = "stories";
    if (cfg.chat_template.empty()) cfg.chat_template = kChatMl;
    auto s = Server::create(*engine_, cfg);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(*s);
    EXPECT_TRUE(server_->start().ok());
    return server_->port();
  }
  // The engine's own greedy text for `prompt`.
  static std::string engine_greedy(const std::string& prompt, int max_tokens) {
    GenerationOptions o;
    o.max_tokens = max_tokens;
    o.sampling.temperature = 0;
    std::mutex mu;
    std::condition_variable cv;
    std::string text;
    bool done = false;
    auto id = engine_->submit(engine_->vocab()->encode(prompt, true), o, [&](const RequestEvent& ev) {
      if (!ev.request_finished) return;
      std::lock_guard<std::mutex> lock(mu);
      text = (*ev.results)[0].text;
      done = true;
      cv.notify_all();
    });
    EXPECT_TRUE(id.ok());
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
    return text;
  }
  static void expect_error(const tessera::testing::HttpResponse& r, int status, const std::string& param = {}) {
    EXPECT_EQ(r.status, status) << r.body;
    json j = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
    const json& e = j["error"];
    EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << r.body;
    EXPECT_TRUE(e["type"].is_string()) << r.body;
    EXPECT_TRUE(e.contains("param") && e.contains("code")) << r.body;
    if (!param.empty()) {
      EXPECT_EQ(e["param"], param) << r.body;
    }
  }

  static Engine* engine_;
  std::unique_ptr<Server> server_;
};

Engine* ServerTest::engine_ = nullptr;

TEST_F(ServerTest, BadChatTemplateIsOneErrorNotACrash) {
  // create() fails before the server has an io context; destroying it must not touch one.
  for (const char* bad : {"{% if %}", "{{ x", "{% endif %}"}) {
    ServerConfig cfg;
    cfg.chat_template = bad;
    auto s = Server::create(*engine_, cfg);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.status().message().find("chat template"), std::string::npos) << s.status().message();
  }
}

TEST_F(ServerTest, HealthAndModels) {
  const uint16_t port = start();
  auto h = http_request(port, "GET", "/health", "");
  EXPECT_EQ(h.status, 200);
  auto m = http_request(port, "GET", "/v1/models", "");
  ASSERT_EQ(m.status, 200);
  json j = json::parse(m.body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], "stories");
  expect_error(http_request(port, "GET", "/nope", ""), 404);
}

TEST_F(ServerTest, GreedyCompletionEqualsEngine) {
  const uint16_t port = start();
  const std::string expected = engine_greedy("Once upon a time", 24);
  EXPECT_EQ(expected.rfind(", there was a little girl named Lily", 0), 0u) << expected;
  auto r = http_request(port, "POST", "/v1/completions",
                        R"({"model":"stories","prompt":"Once upon a time","max_tokens":24,"temperature":0,"foo":1})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "stories");
  EXPECT_TRUE(j["id"].is_string());
  EXPECT_TRUE(j["created"].is_number_integer());
  EXPECT_EQ(j["choices"][0]["text"], expected);
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 24);
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"].get<int>() + 24);
  EXPECT_TRUE(j["usage"]["prompt_tokens_details"]["cached_tokens"].is_number_integer());
}

// Issue #17: "" is a prompt, as in OpenAI's API and `tessera run -p ""`: the
// model's BOS token alone, continued like any other prompt.
TEST_F(ServerTest, EmptyPromptStartsFromBos) {
  const uint16_t port = start();
  ASSERT_EQ(engine_->vocab()->encode("", true).size(), 1u);
  const std::string expected = engine_greedy("", 12);
  EXPECT_EQ(expected.rfind(" Once upon a time", 0), 0u) << expected;
  auto r = http_request(port, "POST", "/v1/completions", R"({"prompt":"","max_tokens":12,"temperature":0})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["choices"][0]["text"], expected);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 1);
  EXPECT_EQ(j["usage"]["completion_tokens"], 12);
  // An empty token-id array is still nothing to continue.
  r = http_request(port, "POST", "/v1/completions", R"({"prompt":[],"max_tokens":2})");
  EXPECT_EQ(r.status, 400) << r.body;
}

TEST_F(ServerTest, PromptVariantsNAndLogprobs) {
  const uint16_t port = start();
  auto r = http_request(port, "POST", "/v1/completions",
                        R"({"prompt":["Once upon a time","Lily"],"max_tokens":4,"n":2,"logprobs":2,"seed":7})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  ASSERT_EQ(j["choices"].size(), 4u);
  EXPECT_EQ(j["choices"][3]["index"], 3);
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"].size(), 4u);
  EXPECT_EQ(j["choices"][0]["logprobs"]["top_logprobs"][0].size(), 2u);
  auto ids =
      http_request(port, "POST", "/v1/completions", R"({"prompt":[1,403,407,261,378],"max_tokens":3,"temperature":0})");
  ASSERT_EQ(ids.status, 200) << ids.body;
}

TEST_F(ServerTest, StreamingConcatenatesToSameText) {
  const uint16_t port = start();
  const std::string expected = engine_greedy("Once upon a time", 24);
  auto r = http_request(port, "POST", "/v1/completions",
                        R"({"prompt":"Once upon a time","max_tokens":24,"temperature":0,"stream":true,
                            "stream_options":{"include_usage":true}})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["Content-Type"], "text/event-stream");
  const auto events = sse_data(r.body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  std::string finish;
  bool usage = false;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json j = json::parse(events[i]);
    if (j.contains("usage") && !j["usage"].is_null()) {
      usage = true;
      EXPECT_EQ(j["usage"]["completion_tokens"], 24);
      continue;
    }
    text += j["choices"][0]["text"].get<std::string>();
    if (!j["choices"][0]["finish_reason"].is_null()) finish = j["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, expected);
  EXPECT_EQ(finish, "length");
  EXPECT_TRUE(usage);
}

TEST_F(ServerTest, ChatCompletionsWithTemplate) {
  const uint16_t port = start();
  const std::string body =
      R"({"messages":[{"role":"system","content":"You tell stories."},
                      {"role":"user","content":[{"type":"text","text":"Tell me about Lily."}]}],
          "max_completion_tokens":12,"temperature":0,"logprobs":true,"top_logprobs":1})";
  auto r = http_request(port, "POST", "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  const std::string text = j["choices"][0]["message"]["content"];
  EXPECT_EQ(j["choices"][0]["logprobs"]["content"].size(), j["usage"]["completion_tokens"].get<size_t>());
  json sj = json::parse(body);
  sj["stream"] = true;
  auto s = http_request(port, "POST", "/v1/chat/completions", sj.dump());
  ASSERT_EQ(s.status, 200);
  const auto events = sse_data(s.body);
  ASSERT_EQ(events.back(), "[DONE]");
  json first = json::parse(events[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  std::string streamed;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json d = json::parse(events[i])["choices"][0]["delta"];
    if (d.contains("content")) streamed += d["content"].get<std::string>();
  }
  EXPECT_EQ(streamed, text);
}

TEST_F(ServerTest, BadRequests) {
  const uint16_t port = start();
  auto post = [&](const std::string& body) { return http_request(port, "POST", "/v1/completions", body); };
  expect_error(post("{not json"), 400);
  expect_error(post(R"({"prompt":"hi","temperature":"hot"})"), 400, "temperature");
  {
    // A field without an upper bound names its range in words, not as DBL_MAX.
    const auto r = post(R"({"prompt":"hi","temperature":-0.5})");
    expect_error(r, 400, "temperature");
    EXPECT_EQ(json::parse(r.body)["error"]["message"], "temperature must be a finite number >= 0.0, got -0.5");
  }
  expect_error(post(R"({"prompt":"hi","top_p":1.5})"), 400, "top_p");
  expect_error(post(R"({"prompt":"hi","top_p":-0.1})"), 400, "top_p");
  expect_error(post(R"({"prompt":"hi","n":0})"), 400, "n");
  expect_error(post(R"({"prompt":"hi","max_tokens":-1})"), 400, "max_tokens");
  json many = {{"prompt", "hi"}, {"stop", std::vector<std::string>(17, "x")}};
  expect_error(post(many.dump()), 400, "stop");
  expect_error(post(R"({"prompt":"hi","logit_bias":{"99999":1}})"), 400, "logit_bias");
  expect_error(post(R"({"prompt":7})"), 400, "prompt");
  expect_error(post(R"({"max_tokens":3})"), 400, "prompt");
  expect_error(post("{\"prompt\":\"bad \xff\xfe utf8\"}"), 400);
  std::string longp;
  for (int i = 0; i < 300; ++i) longp += "Once upon a time ";
  auto tl = post(json{{"prompt", longp}, {"max_tokens", 4}}.dump());
  expect_error(tl, 400, "prompt");
  EXPECT_NE(tl.body.find("context"), std::string::npos) << tl.body;
  auto unknown = post(R"({"model":"gpt-4","prompt":"hi"})");
  expect_error(unknown, 404, "model");
  expect_error(http_request(port, "POST", "/v1/chat/completions", R"({"messages":[{"role":"wizard","content":"x"}]})"),
               400, "messages");
  // The server still answers after all that.
  EXPECT_EQ(post(R"({"prompt":"hi","max_tokens":2})").status, 200);
}

TEST_F(ServerTest, BodyTooLargeIs413) {
  ServerConfig cfg;
  cfg.max_body_bytes = 1024;
  const uint16_t port = start(cfg);
  const std::string body = json{{"prompt", std::string(4096, 'a')}}.dump();
  expect_error(http_request(port, "POST", "/v1/completions", body), 413);
}

TEST_F(ServerTest, ApiKeyIs401WithoutBearer) {
  ServerConfig cfg;
  cfg.api_key = "sekret";
  const uint16_t port = start(cfg);
  const std::string body = R"({"prompt":"hi","max_tokens":2})";
  expect_error(http_request(port, "POST", "/v1/completions", body), 401);
  expect_error(http_request(port, "POST", "/v1/completions", body, {{"Authorization", "Bearer wrong"}}), 401);
  EXPECT_EQ(http_request(port, "POST", "/v1/completions", body, {{"Authorization", "Bearer sekret"}}).status, 200);
  EXPECT_EQ(http_request(port, "GET", "/health", "").status, 200);
}

// Opens a streaming request on a raw socket and waits for its first bytes.
struct RawStream {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket socket{ioc};
  RawStream(uint16_t port, const std::string& body) {
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    const std::string req =
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    boost::asio::write(socket, boost::asio::buffer(req));
    char buf[256];
    socket.read_some(boost::asio::buffer(buf));
  }
};

TEST_F(ServerTest, QueueFullIs429AndHealthStaysResponsive) {
  ServerConfig cfg;
  cfg.max_queue = 1;
  const uint16_t port = start(cfg);
  {
    RawStream busy(port, R"({"prompt":"Once upon a time","max_tokens":400,"ignore_eos":true,"stream":true})");
    auto r = http_request(port, "POST", "/v1/completions", R"({"prompt":"hi","max_tokens":2})");
    expect_error(r, 429);
    EXPECT_EQ(r.headers["Retry-After"], "1");
    // Their latency under load: HealthAndMetricsWithin100msWhileSaturated.
    EXPECT_EQ(http_request(port, "GET", "/health", "").status, 200);
    EXPECT_EQ(http_request(port, "GET", "/metrics", "").status, 200);
  }  // closing the socket cancels the stream
  for (int i = 0; i < 200 && server_->state().in_flight.load() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(http_request(port, "POST", "/v1/completions", R"({"prompt":"hi","max_tokens":2})").status, 200);
}

// Issue #6: /health and /metrics answer within 100 ms while the engine is
// saturated (every KV block in use, requests waiting). Judged on the median
// and the 90th percentile of 40 probes, not the maximum: on the shared 2-core
// CI machine a single probe can lose the CPU to the engine threads or another
// job for a scheduler slice or two, which says nothing about the server.
TEST_F(ServerTest, HealthAndMetricsWithin100msWhileSaturated) {
  const uint16_t port = start();
  constexpr int kStreams = 64;
  std::vector<std::unique_ptr<RawStream>> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(std::make_unique<RawStream>(port, json{{"prompt", "Once upon a time " + std::to_string(i)},
                                                             {"max_tokens", 200},
                                                             {"ignore_eos", true},
                                                             {"stream", true}}
                                                            .dump()));
  }
  const EngineMetrics busy = engine_->metrics();
  EXPECT_GT(busy.running, 0);
  EXPECT_GT(busy.waiting, 0) << "the engine should have a queue";
  std::vector<double> ms;
  for (int i = 0; i < 20; ++i) {
    for (const char* path : {"/health", "/metrics"}) {
      const auto t0 = std::chrono::steady_clock::now();
      EXPECT_EQ(http_request(port, "GET", path, "").status, 200) << path;
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(engine_->metrics().waiting, 0) << "the engine drained before the probes ended; the test proves nothing";
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2], p90 = ms[ms.size() * 9 / 10];
  EXPECT_LT(median, 100.0);
  EXPECT_LT(p90, 100.0) << "median " << median << " ms, max " << ms.back() << " ms";
  streams.clear();  // disconnecting cancels the streams
  for (int i = 0; i < 300 && server_->state().in_flight.load() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server_->state().in_flight.load(), 0);
}

TEST_F(ServerTest, ClientDisconnectCancels) {
  const uint16_t port = start();
  const int64_t before = engine_->metrics().finished_cancelled;
  { RawStream s(port, R"({"prompt":"Once upon a time","max_tokens":400,"ignore_eos":true,"stream":true})"); }
  for (int i = 0; i < 300 && server_->state().in_flight.load() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  {  // non-streaming too: disconnect before the answer
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::socket sock(ioc);
    sock.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    const std::string body = R"({"prompt":"Once upon a time","max_tokens":400,"ignore_eos":true})";
    const std::string req =
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
        body;
    boost::asio::write(sock, boost::asio::buffer(req));
    // Disconnect as soon as the request is in flight: a fixed sleep let the
    // 400 tokens of this tiny model finish first once decode got faster.
    for (int i = 0; i < 2000 && server_->state().in_flight.load() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  }
  for (int i = 0; i < 300 && engine_->metrics().finished_cancelled < before + 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(engine_->metrics().finished_cancelled, before + 2);
  for (int i = 0; i < 100 && engine_->metrics().running > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(engine_->metrics().running, 0);
  EXPECT_EQ(server_->state().in_flight.load(), 0);
}

TEST_F(ServerTest, MetricsExposition) {
  const uint16_t port = start();
  ASSERT_EQ(http_request(port, "POST", "/v1/completions", R"({"prompt":"Once","max_tokens":4})").status, 200);
  auto r = http_request(port, "GET", "/metrics", "");
  ASSERT_EQ(r.status, 200);
  for (const char* name : {"tessera_time_to_first_token_seconds", "tessera_time_per_output_token_seconds",
                           "tessera_inter_token_latency_seconds", "tessera_e2e_request_latency_seconds",
                           "tessera_request_queue_time_seconds"}) {
    EXPECT_NE(r.body.find(std::string("# TYPE ") + name + " histogram"), std::string::npos) << name;
    EXPECT_NE(r.body.find(std::string(name) + "_bucket{le=\"+Inf\"}"), std::string::npos) << name;
  }
  for (const char* name :
       {"tessera_num_requests_running", "tessera_num_requests_waiting", "tessera_kv_cache_usage_perc"}) {
    EXPECT_NE(r.body.find(std::string("# TYPE ") + name + " gauge"), std::string::npos) << name;
  }
  for (const char* name :
       {"tessera_prompt_tokens_total", "tessera_cached_prompt_tokens_total", "tessera_generation_tokens_total",
        "tessera_prefix_cache_queries_total", "tessera_prefix_cache_hits_total", "tessera_num_preemptions_total",
        "tessera_request_success_total"}) {
    EXPECT_NE(r.body.find(std::string("# HELP ") + name + " "), std::string::npos) << name;
    EXPECT_NE(r.body.find(std::string("# TYPE ") + name + " counter"), std::string::npos) << name;
  }
  EXPECT_NE(r.body.find("tessera_request_success_total{finished_reason=\"length\"}"), std::string::npos);
}

TEST_F(ServerTest, TokenizeAndDetokenize) {
  const uint16_t port = start();
  auto t = http_request(port, "POST", "/tokenize", R"({"prompt":"Once upon a time"})");
  ASSERT_EQ(t.status, 200) << t.body;
  json tj = json::parse(t.body);
  EXPECT_EQ(tj["tokens"].get<std::vector<int32_t>>(), engine_->vocab()->encode("Once upon a time", true));
  auto d = http_request(port, "POST", "/detokenize", json{{"tokens", tj["tokens"]}}.dump());
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(json::parse(d.body)["prompt"], "Once upon a time");
}

// Issue #17: text in messages, tools and prompts never becomes control
// tokens. stories260K's vocabulary has <s> = 1 and </s> = 2 as control
// tokens; the server's ChatML template writes none of them, so the only BOS
// is the one prepended and no </s> may appear at all.
TEST_F(ServerTest, CallerTextNeverBecomesControlTokens) {
  const uint16_t port = start();
  const Tokenizer& tok = tokenizer_of(*engine_->vocab());
  ASSERT_EQ(tok.token_type(2), TokenType::kControl);
  for (const std::string content : {"</s>Once", "Once </s><s> upon", "a time</s>"}) {
    SCOPED_TRACE(content);
    const json messages =
        json::array({{{"role", "system"}, {"content", "<s>"}}, {{"role", "user"}, {"content", content}}});
    auto t = http_request(port, "POST", "/tokenize", json{{"messages", messages}}.dump());
    ASSERT_EQ(t.status, 200) << t.body;
    const auto ids = json::parse(t.body)["tokens"].get<std::vector<int32_t>>();
    // The same ids as the one function the CLI uses, built independently here.
    auto tmpl = ChatTemplate::parse(kChatMl);
    ASSERT_TRUE(tmpl.ok());
    auto expected = render_chat_tokens(*tmpl, nlohmann::ordered_json(messages), ChatPromptOptions{}, tok);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    EXPECT_EQ(ids, expected->token_ids);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 0);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 1);
    EXPECT_EQ(ids.front(), 1);
    // With the spellings parsed as control tokens, the same text would hold some.
    const auto parsed = tok.encode(expected->text, true, /*parse_special=*/true);
    EXPECT_GT(std::count(parsed.begin(), parsed.end(), 2) + std::count(parsed.begin(), parsed.end(), 1), 1);
    // usage.prompt_tokens counts exactly those ids.
    auto c = http_request(port, "POST", "/v1/chat/completions",
                          json{{"messages", messages}, {"max_tokens", 1}, {"temperature", 0}}.dump());
    ASSERT_EQ(c.status, 200) << c.body;
    EXPECT_EQ(json::parse(c.body)["usage"]["prompt_tokens"].get<size_t>(), ids.size());
  }
  // Completions prompts are plain text after the vocabulary's BOS.
  for (const std::string prompt : {"</s>Once", "Once </s> upon", "a time</s>"}) {
    auto t = http_request(port, "POST", "/tokenize", json{{"prompt", prompt}}.dump());
    ASSERT_EQ(t.status, 200) << t.body;
    const auto ids = json::parse(t.body)["tokens"].get<std::vector<int32_t>>();
    EXPECT_EQ(ids, tok.encode(prompt, true));
    EXPECT_EQ(ids.front(), 1);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 0);
    auto c = http_request(port, "POST", "/v1/completions", json{{"prompt", prompt}, {"max_tokens", 1}}.dump());
    ASSERT_EQ(c.status, 200) << c.body;
    EXPECT_EQ(json::parse(c.body)["usage"]["prompt_tokens"].get<size_t>(), ids.size());
  }
  // Tools reach the template as caller text too.
  ServerConfig cfg;
  cfg.chat_template = "{{ tools|tojson }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}";
  server_->stop(std::chrono::milliseconds(0));
  const uint16_t port2 = start(cfg);
  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
                     {"tools", json::array({{{"type", "function"}, {"function", {{"name", "</s>"}}}}})}};
  auto t = http_request(port2, "POST", "/tokenize", body.dump());
  ASSERT_EQ(t.status, 200) << t.body;
  const auto ids = json::parse(t.body)["tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 1);  // the template's own eos_token only
  EXPECT_EQ(ids.back(), 2);
  expect_error(http_request(port2, "POST", "/tokenize", R"({"messages":[{"role":"user","content":"x"}],"tools":5})"),
               400, "tools");
}

TEST_F(ServerTest, HostileChatTemplateIsAClearErrorAtRequestTime) {
  ServerConfig cfg;
  cfg.chat_template =
      "{% for m in messages %}{% for i in range(1000000) %}{% for j in range(1000000) %}"
      "{% endfor %}{% endfor %}{% endfor %}";
  const uint16_t port = start(cfg);
  auto r = http_request(port, "POST", "/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}]})");
  expect_error(r, 400, "messages");
  EXPECT_NE(r.body.find("chat_template_limit"), std::string::npos) << r.body;
  EXPECT_EQ(http_request(port, "GET", "/health", "").status, 200);
}

// The engine's own log_softmax of each prompt token given the ones before
// it (index i for token i >= 1; index 0 unused), in double precision.
std::vector<double> engine_prompt_logprobs(Engine& engine, const std::vector<int32_t>& ids, int32_t n_vocab) {
  std::vector<double> out(ids.size(), 0.0);
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  GenerationOptions o;
  o.max_tokens = 0;
  o.prompt_logits = true;
  auto id = engine.submit(ids, o, [&](const RequestEvent& ev) {
    for (int32_t r = 0; ev.prompt_logits && r < ev.prompt_logits_rows; ++r) {
      const size_t next = static_cast<size_t>(ev.prompt_logits_begin + r + 1);
      if (next >= ids.size()) break;
      const float* row = ev.prompt_logits + static_cast<size_t>(r) * static_cast<size_t>(n_vocab);
      double mx = row[0];
      for (int32_t v = 0; v < n_vocab; ++v) mx = std::max(mx, static_cast<double>(row[v]));
      double z = 0;
      for (int32_t v = 0; v < n_vocab; ++v) z += std::exp(static_cast<double>(row[v]) - mx);
      out[next] = static_cast<double>(row[ids[next]]) - mx - std::log(z);
    }
    if (!ev.request_finished) return;
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  });
  EXPECT_TRUE(id.ok());
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  return out;
}

// Issue #17: echo + logprobs and prompt_logprobs score the prompt with the
// engine's forward pass (tolerance 1e-4 nats: float logits, the server's
// float log_softmax against this test's double one).
TEST_F(ServerTest, EchoAndPromptLogprobsScoreThePrompt) {
  const uint16_t port = start();
  const std::string prompt = "Once upon a time, Lily";
  const std::vector<int32_t> ids = engine_->vocab()->encode(prompt, true);
  ASSERT_GT(ids.size(), 4u);
  const std::vector<double> ref = engine_prompt_logprobs(*engine_, ids, engine_->model_info().n_vocab);
  using ojson = nlohmann::ordered_json;

  // max_tokens 0 + echo: the prompt scored, nothing generated.
  auto r = http_request(port, "POST", "/v1/completions",
                        json{{"prompt", prompt}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 3}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  ojson j = ojson::parse(r.body);
  const ojson& c = j["choices"][0];
  EXPECT_EQ(c["text"], prompt);
  EXPECT_EQ(c["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 0);
  EXPECT_EQ(j["usage"]["prompt_tokens"], ids.size());
  const ojson& lp = c["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), ids.size());
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  for (size_t i = 1; i < ids.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), ref[i], 1e-4);
    const ojson& top = lp["top_logprobs"][i];
    EXPECT_LE(top.size(), 3u);
    EXPECT_GE(top.size(), 2u);  // only tokens with the same text merge
    double prev = 0;
    bool first = true;
    for (auto it = top.begin(); it != top.end(); ++it) {  // descending probability, in the body's order
      if (!first) {
        EXPECT_LE(it.value().get<double>(), prev);
      }
      prev = it.value().get<double>();
      first = false;
    }
    EXPECT_GE(top.begin().value().get<double>(), lp["token_logprobs"][i].get<double>() - 1e-6);
  }

  // echo with generation: the prompt, then the engine's greedy continuation.
  auto g = http_request(
      port, "POST", "/v1/completions",
      json{{"prompt", prompt}, {"max_tokens", 4}, {"echo", true}, {"logprobs", 1}, {"temperature", 0}}.dump());
  ASSERT_EQ(g.status, 200) << g.body;
  json gj = json::parse(g.body);
  EXPECT_EQ(gj["choices"][0]["text"], prompt + engine_greedy(prompt, 4));
  EXPECT_EQ(gj["choices"][0]["logprobs"]["tokens"].size(), ids.size() + 4);
  EXPECT_NEAR(gj["choices"][0]["logprobs"]["token_logprobs"][1].get<double>(), ref[1], 1e-4);
  // Echo without logprobs needs no scoring and allows n > 1.
  auto e2 = http_request(port, "POST", "/v1/completions",
                         json{{"prompt", prompt}, {"max_tokens", 2}, {"echo", true}, {"n", 2}}.dump());
  ASSERT_EQ(e2.status, 200) << e2.body;
  EXPECT_EQ(json::parse(e2.body)["choices"][1]["text"].get<std::string>().rfind(prompt, 0), 0u);

  // vLLM's prompt_logprobs, without echo: token id -> {logprob, rank, decoded_token}.
  auto p = http_request(port, "POST", "/v1/completions",
                        json{{"prompt", ids}, {"max_tokens", 0}, {"prompt_logprobs", 2}}.dump());
  ASSERT_EQ(p.status, 200) << p.body;
  ojson pj = ojson::parse(p.body);
  EXPECT_EQ(pj["choices"][0]["text"], "");
  const ojson& pl = pj["choices"][0]["prompt_logprobs"];
  ASSERT_EQ(pl.size(), ids.size());
  EXPECT_TRUE(pl[0].is_null());
  for (size_t i = 1; i < ids.size(); ++i) {
    SCOPED_TRACE(i);
    const ojson& e = pl[i];
    ASSERT_TRUE(e.contains(std::to_string(ids[i]))) << e.dump();
    const ojson& mine = e[std::to_string(ids[i])];
    EXPECT_NEAR(mine["logprob"].get<double>(), ref[i], 1e-4);
    EXPECT_GE(mine["rank"].get<int>(), 1);
    EXPECT_LE(e.size(), 3u);
    // The chosen entry comes first; the alternatives follow with ranks 1, 2.
    EXPECT_EQ(e.begin().key(), std::to_string(ids[i]));
    if (mine["rank"] == 1) {
      EXPECT_GE(mine["logprob"].get<double>(), std::prev(e.end()).value()["logprob"].get<double>());
    }
  }

  // max_tokens 0 without echo generates nothing.
  auto z = http_request(port, "POST", "/v1/completions", json{{"prompt", prompt}, {"max_tokens", 0}}.dump());
  ASSERT_EQ(z.status, 200) << z.body;
  EXPECT_EQ(json::parse(z.body)["choices"][0]["text"], "");
  EXPECT_EQ(json::parse(z.body)["usage"]["completion_tokens"], 0);
  // Scoring needs one choice.
  expect_error(http_request(port, "POST", "/v1/completions",
                            json{{"prompt", prompt}, {"echo", true}, {"logprobs", 1}, {"n", 2}}.dump()),
               400, "n");
  expect_error(http_request(port, "POST", "/v1/completions", json{{"prompt", prompt}, {"prompt_logprobs", 21}}.dump()),
               400, "prompt_logprobs");

  // Streaming: the echoed prompt (with its logprobs) comes first, then the tokens.
  auto s = http_request(
      port, "POST", "/v1/completions",
      json{{"prompt", prompt}, {"max_tokens", 3}, {"echo", true}, {"logprobs", 0}, {"temperature", 0}, {"stream", true}}
          .dump());
  ASSERT_EQ(s.status, 200);
  const auto events = sse_data(s.body);
  ASSERT_GE(events.size(), 3u);
  json first = json::parse(events[0])["choices"][0];
  EXPECT_EQ(first["text"], prompt);
  EXPECT_EQ(first["logprobs"]["tokens"].size(), ids.size());
  EXPECT_NEAR(first["logprobs"]["token_logprobs"][2].get<double>(), ref[2], 1e-4);
  std::string streamed;
  for (size_t i = 0; i + 1 < events.size(); ++i)
    streamed += json::parse(events[i])["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(streamed, prompt + engine_greedy(prompt, 3));
}

// Issue #17: text_offset indexes the returned `text` (bytes): BOS adds no
// text, SentencePiece's dummy-prefix space is not counted, a byte token
// (<0x0A>) counts its one byte, and generated tokens continue after the prompt.
TEST_F(ServerTest, TextOffsetsIndexTheReturnedText) {
  const uint16_t port = start();
  const Vocab& vocab = *engine_->vocab();
  const std::string prompt = "Once upon a time,\nLily";
  const std::vector<int32_t> ids = vocab.encode(prompt, true);
  ASSERT_EQ(ids[0], vocab.bos_id());
  ASSERT_EQ(*vocab.decode(ids), prompt);
  auto r = http_request(port, "POST", "/v1/completions",
                        json{{"prompt", prompt},
                             {"max_tokens", 6},
                             {"echo", true},
                             {"logprobs", 1},
                             {"temperature", 0},
                             {"ignore_eos", true}}
                            .dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json c = json::parse(r.body)["choices"][0];
  const std::string text = c["text"];
  const auto off = c["logprobs"]["text_offset"].get<std::vector<size_t>>();
  ASSERT_EQ(off.size(), ids.size() + 6);
  EXPECT_EQ(off[0], 0u);  // <s>: no text
  EXPECT_EQ(off[1], 0u);  // "▁Once": its space is the dummy prefix, not in the text
  std::string first = vocab.token_piece(ids[1]);
  EXPECT_EQ(text.substr(0, first.size() - 1), first.substr(1));
  bool saw_byte_token = false;
  for (size_t i = 2; i < ids.size(); ++i) {
    SCOPED_TRACE(i);
    const std::string piece = vocab.token_piece(ids[i]);
    saw_byte_token |= piece == "\n";
    EXPECT_EQ(text.substr(off[i], piece.size()), piece);
    EXPECT_EQ(off[i], off[i - 1] + (i == 2 ? first.size() - 1 : vocab.token_piece(ids[i - 1]).size()));
  }
  EXPECT_TRUE(saw_byte_token) << "the prompt should hold a byte token";
  EXPECT_EQ(off[ids.size()], prompt.size());  // the first generated token starts right after the prompt
  const auto tokens = c["logprobs"]["tokens"].get<std::vector<std::string>>();
  size_t expect = prompt.size();
  for (size_t k = ids.size(); k < off.size(); ++k) {  // generated: each token's bytes at its offset
    SCOPED_TRACE(k);
    EXPECT_EQ(off[k], expect);
    ASSERT_LE(off[k], text.size());
    // tokens[k] is the token's display text; its bytes in `text` follow at off[k].
    if (tokens[k].find("<0x") == std::string::npos) {
      EXPECT_EQ(text.substr(off[k], tokens[k].size()), tokens[k]);
      expect += tokens[k].size();
    } else {
      expect += 1;
    }
  }
  // Without echo the completion's offsets start at 0 and index its own text.
  auto n = http_request(
      port, "POST", "/v1/completions",
      json{{"prompt", prompt}, {"max_tokens", 6}, {"logprobs", 0}, {"temperature", 0}, {"ignore_eos", true}}.dump());
  ASSERT_EQ(n.status, 200);
  const json nc = json::parse(n.body)["choices"][0];
  const auto noff = nc["logprobs"]["text_offset"].get<std::vector<size_t>>();
  ASSERT_EQ(noff.size(), 6u);
  EXPECT_EQ(noff[0], 0u);
  for (size_t k = 0; k < noff.size(); ++k) EXPECT_EQ(noff[k], off[ids.size() + k] - prompt.size()) << k;
  // Streaming: each token's offset is the length of the text streamed before it (echo included).
  auto s = http_request(port, "POST", "/v1/completions",
                        json{{"prompt", prompt},
                             {"max_tokens", 6},
                             {"echo", true},
                             {"logprobs", 0},
                             {"temperature", 0},
                             {"ignore_eos", true},
                             {"stream", true}}
                            .dump());
  ASSERT_EQ(s.status, 200);
  std::string streamed;
  size_t checked = 0;
  for (const std::string& e : sse_data(s.body)) {
    if (e == "[DONE]") break;
    const json ch = json::parse(e)["choices"][0];
    if (ch["logprobs"].is_object() && !ch["logprobs"]["text_offset"].empty() && !streamed.empty()) {
      EXPECT_EQ(ch["logprobs"]["text_offset"][0].get<size_t>(), streamed.size());
      ++checked;
    }
    streamed += ch["text"].get<std::string>();
  }
  EXPECT_EQ(streamed, text);
  EXPECT_GE(checked, 1u);
}

// vLLM's prompt_logprobs on /v1/chat/completions: the rendered conversation's
// tokens, next to `choices`, against the engine's own forward pass.
TEST_F(ServerTest, ChatPromptLogprobs) {
  const uint16_t port = start();
  const json messages = json::array({{{"role", "user"}, {"content", "Tell me a story about Lily"}}});
  auto t = http_request(port, "POST", "/tokenize", json{{"messages", messages}}.dump());
  ASSERT_EQ(t.status, 200) << t.body;
  const auto ids = json::parse(t.body)["tokens"].get<std::vector<int32_t>>();
  const std::vector<double> ref = engine_prompt_logprobs(*engine_, ids, engine_->model_info().n_vocab);
  auto r = http_request(port, "POST", "/v1/chat/completions",
                        json{{"messages", messages}, {"max_tokens", 1}, {"prompt_logprobs", 1}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  ASSERT_TRUE(j.contains("prompt_logprobs")) << r.body;
  const json& pl = j["prompt_logprobs"];
  ASSERT_EQ(pl.size(), ids.size());
  EXPECT_EQ(j["usage"]["prompt_tokens"], ids.size());
  EXPECT_TRUE(pl[0].is_null());
  for (size_t i = 1; i < ids.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_NEAR(pl[i][std::to_string(ids[i])]["logprob"].get<double>(), ref[i], 1e-4);
  }
  expect_error(http_request(port, "POST", "/v1/chat/completions",
                            json{{"messages", messages}, {"prompt_logprobs", 1}, {"stream", true}}.dump()),
               400, "prompt_logprobs");
  expect_error(http_request(port, "POST", "/v1/chat/completions",
                            json{{"messages", messages}, {"prompt_logprobs", 1}, {"n", 2}}.dump()),
               400, "n");
}

// Issue #17: OpenAI's parameter edges.
TEST_F(ServerTest, SamplingEdgesMeanWhatOpenAiSays) {
  const uint16_t port = start();
  auto post = [&](const json& body) { return http_request(port, "POST", "/v1/completions", body.dump()); };
  const std::string prompt = "Once upon a time";
  // top_p 0 keeps only the most likely token: the greedy text, whatever the temperature.
  auto t = post({{"prompt", prompt}, {"max_tokens", 12}, {"top_p", 0}, {"temperature", 1.5}, {"seed", 3}});
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(json::parse(t.body)["choices"][0]["text"], engine_greedy(prompt, 12));
  // Very large temperatures are accepted (near-uniform sampling).
  for (double temp : {1e6, 1e300}) {
    auto h = post({{"prompt", prompt}, {"max_tokens", 4}, {"temperature", temp}, {"ignore_eos", true}});
    ASSERT_EQ(h.status, 200) << h.body;
    EXPECT_EQ(json::parse(h.body)["usage"]["completion_tokens"], 4);
  }
  // seed -1 is "random": two such requests differ, while one fixed seed
  // (even 2^64 - 1, which -1 would wrap to) repeats. At temperature 5 over
  // 24 tokens the chance that two random seeds give the same text is far
  // below 1e-9 (each token has hundreds of likely choices).
  const json hot = {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 5}, {"ignore_eos", true}};
  json fixed = hot;
  fixed["seed"] = uint64_t{18446744073709551615u};
  auto f1 = post(fixed), f2 = post(fixed);
  ASSERT_EQ(f1.status, 200) << f1.body;
  EXPECT_EQ(json::parse(f1.body)["choices"][0]["text"], json::parse(f2.body)["choices"][0]["text"]);
  json random = hot;
  random["seed"] = -1;
  auto r1 = post(random), r2 = post(random);
  ASSERT_EQ(r1.status, 200) << r1.body;
  EXPECT_NE(json::parse(r1.body)["choices"][0]["text"], json::parse(r2.body)["choices"][0]["text"]);
  EXPECT_NE(json::parse(r1.body)["choices"][0]["text"], json::parse(f1.body)["choices"][0]["text"]);

  // Chat top_logprobs come in descending probability; the chosen token is the entry's own token/logprob.
  auto c = http_request(port, "POST", "/v1/chat/completions",
                        json{{"messages", json::array({{{"role", "user"}, {"content", "Tell me a story"}}})},
                             {"max_tokens", 6},
                             {"logprobs", true},
                             {"top_logprobs", 5},
                             {"seed", 11}}
                            .dump());
  ASSERT_EQ(c.status, 200) << c.body;
  const json chat = json::parse(c.body);  // a range-for over a member of a temporary would dangle
  for (const json& e : chat["choices"][0]["logprobs"]["content"]) {
    const json& top = e["top_logprobs"];
    ASSERT_EQ(top.size(), 5u);
    for (size_t k = 1; k < top.size(); ++k) {
      EXPECT_LE(top[k]["logprob"].get<double>(), top[k - 1]["logprob"].get<double>());
    }
    EXPECT_LE(e["logprob"].get<double>(), top[0]["logprob"].get<double>() + 1e-6);
  }
}

TEST_F(ServerTest, MaxTokensAgainstTheContext) {
  const uint16_t port = start();
  const int64_t ctx = engine_->model_info().context;
  std::string prompt;
  while (static_cast<int64_t>(engine_->vocab()->encode(prompt + "Once upon a time ", true).size()) < ctx - 5) {
    prompt += "Once upon a time ";
  }
  const auto n_prompt = static_cast<int64_t>(engine_->vocab()->encode(prompt, true).size());
  const int64_t room = ctx - n_prompt;
  ASSERT_GT(room, 0);
  ASSERT_LT(room, 16);
  // The default max_tokens (16) is shortened to the room left.
  auto d = http_request(port, "POST", "/v1/completions", json{{"prompt", prompt}, {"ignore_eos", true}}.dump());
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(json::parse(d.body)["usage"]["completion_tokens"], room);
  // An explicit one that does not fit is a 400 naming both numbers.
  auto e = http_request(port, "POST", "/v1/completions", json{{"prompt", prompt}, {"max_tokens", 16}}.dump());
  expect_error(e, 400, "max_tokens");
  const std::string msg = json::parse(e.body)["error"]["message"];
  EXPECT_NE(msg.find("max_tokens 16"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(ctx)), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(room)), std::string::npos) << msg;
  EXPECT_EQ(json::parse(e.body)["error"]["code"], "context_length_exceeded");
  // Exactly the room fits.
  EXPECT_EQ(http_request(port, "POST", "/v1/completions", json{{"prompt", prompt}, {"max_tokens", room}}.dump()).status,
            200);
}

// Sends raw bytes, optionally half-closes, and reads until the server closes.
std::string raw_exchange(uint16_t port, const std::string& bytes, bool half_close) {
  namespace asio = boost::asio;
  asio::io_context ioc;
  asio::ip::tcp::socket socket(ioc);
  socket.connect({asio::ip::make_address("127.0.0.1"), port});
  asio::write(socket, asio::buffer(bytes));
  boost::system::error_code ec;
  if (half_close) socket.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  std::string out;
  char buf[4096];
  while (true) {
    const size_t n = socket.read_some(asio::buffer(buf), ec);
    if (ec) break;
    out.append(buf, n);
  }
  return out;
}

TEST_F(ServerTest, RequestBodiesGetDefiniteAnswers) {
  const uint16_t port = start();
  auto post = [&](const std::string& body, const std::map<std::string, std::string>& headers = {}) {
    return http_request(port, "POST", "/v1/completions", body, headers);
  };
  const std::string ok = R"({"prompt":"hi","max_tokens":1})";
  expect_error(post(ok, {{"Content-Type", "text/plain"}}), 415);
  expect_error(post(ok, {{"Content-Type", "application/x-www-form-urlencoded"}}), 415);
  expect_error(http_request(port, "POST", "/tokenize", R"({"prompt":"hi"})", {{"Content-Type", "text/plain"}}), 415);
  EXPECT_EQ(post(ok, {{"Content-Type", "application/json; charset=utf-8"}}).status, 200);
  EXPECT_EQ(post(ok, {{"Content-Type", "Application/JSON"}}).status, 200);
  auto dup = post(R"({"prompt":"hi","max_tokens":1,"prompt":"again"})");
  expect_error(dup, 400);
  EXPECT_NE(dup.body.find("repeats the key 'prompt'"), std::string::npos) << dup.body;
  expect_error(post(R"({"prompt":"hi","stream_options":{"include_usage":true,"include_usage":false}})"), 400);
  expect_error(http_request(port, "POST", "/tokenize", R"({"prompt":"a","prompt":"b"})"), 400);

  const std::string head =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: "
      "chunked\r\n\r\n";
  // A chunked body cut short by a half-close: 400, then the server closes.
  std::string cut = raw_exchange(port, head + "10\r\n{\"prompt\":\"hi\"", /*half_close=*/true);
  EXPECT_EQ(cut.rfind("HTTP/1.1 400", 0), 0u) << cut;
  EXPECT_NE(cut.find("incomplete_body"), std::string::npos) << cut;
  // A malformed chunk size: 400.
  std::string bad = raw_exchange(port, head + "zz\r\n{}\r\n0\r\n\r\n", /*half_close=*/false);
  EXPECT_EQ(bad.rfind("HTTP/1.1 400", 0), 0u) << bad;
  EXPECT_NE(bad.find("\"error\""), std::string::npos) << bad;
  // A Content-Length body cut short: 400 as well.
  std::string shortlen = raw_exchange(
      port, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"prompt\"", /*half_close=*/true);
  EXPECT_EQ(shortlen.rfind("HTTP/1.1 400", 0), 0u) << shortlen;
  // The server keeps serving.
  EXPECT_EQ(post(ok).status, 200);
}

TEST_F(ServerTest, KeepAliveAcrossStreamingAndPlainRequests) {
  namespace http = boost::beast::http;
  const uint16_t port = start();
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket sock(ioc);
  sock.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  boost::beast::flat_buffer buffer;
  for (const char* body : {R"({"prompt":"Once","max_tokens":4,"stream":true})", R"({"prompt":"Once","max_tokens":4})",
                           R"({"prompt":"Lily","max_tokens":3,"stream":true})"}) {
    http::request<http::string_body> req(http::verb::post, "/v1/completions", 11);
    req.set(http::field::host, "x");
    req.body() = body;
    req.prepare_payload();
    http::write(sock, req);
    http::response<http::string_body> res;
    http::read(sock, buffer, res);
    EXPECT_EQ(res.result_int(), 200u) << res.body();
    EXPECT_TRUE(res.keep_alive());
  }
}

TEST_F(ServerTest, SixtyFourConcurrentStreams) {
  const uint16_t port = start();
  constexpr int kClients = 64;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      const std::string body = json{
          {"prompt", "Once upon a time " + std::to_string(i)},
          {"max_tokens", 16},
          {"stream", true},
          {"seed", i}}.dump();
      auto r = http_request(port, "POST", "/v1/completions", body);
      const auto events = sse_data(r.body);
      if (r.status == 200 && !events.empty() && events.back() == "[DONE]") ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kClients);
}

// With n-gram speculation on, a request may opt out with `"speculative":
// false` (tessera's extension): it gets the same greedy tokens and no
// usage.speculative, while a default request speculates.
TEST(ServerSpeculative, PerRequestOptOut) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  EngineOptions cfg;
  cfg.model = path;
  cfg.ctx_size = 256;
  cfg.spec.method = "ngram";
  auto e = Engine::create(cfg);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  std::unique_ptr<Engine> engine = std::move(*e);
  engine->start();
  ServerConfig sc;
  sc.port = 0;
  auto s = Server::create(*engine, sc);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_TRUE((*s)->start().ok());
  const uint16_t port = (*s)->port();
  // A prompt the story repeats, so the n-gram lookup has proposals.
  const json base = {{"prompt", "Once upon a time, there was a little girl. Once upon a time, there was"},
                     {"max_tokens", 24},
                     {"temperature", 0},
                     {"ignore_eos", true}};
  json off = base;
  off["speculative"] = false;
  const auto on_r = http_request(port, "POST", "/v1/completions", base.dump());
  const auto off_r = http_request(port, "POST", "/v1/completions", off.dump());
  ASSERT_EQ(on_r.status, 200) << on_r.body;
  ASSERT_EQ(off_r.status, 200) << off_r.body;
  const json on_j = json::parse(on_r.body), off_j = json::parse(off_r.body);
  EXPECT_EQ(on_j["choices"][0]["text"], off_j["choices"][0]["text"]);
  EXPECT_TRUE(on_j["usage"].contains("speculative")) << on_r.body;
  EXPECT_FALSE(off_j["usage"].contains("speculative")) << off_r.body;
  json bad = base;
  bad["speculative"] = "no";
  const auto bad_r = http_request(port, "POST", "/v1/completions", bad.dump());
  EXPECT_EQ(bad_r.status, 400) << bad_r.body;
  EXPECT_NE(bad_r.body.find("speculative"), std::string::npos) << bad_r.body;
  (*s)->stop(std::chrono::milliseconds(0));
  engine->stop();
}

}  // namespace
}  // namespace tessera::server
