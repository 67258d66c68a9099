// GET /metrics after a scripted workload with known counts, on an engine of
// its own (fresh counters): every counter, gauge and histogram count equals
// the number the workload implies, and the engine-side ones equal Engine::metrics().
#include <gtest/gtest.h>

// clang-format off
#include <utility>  // before Boost 1.74 asio, whose awaitable.hpp uses std::exchange without it
#include <boost/asio.hpp>
// clang-format on

#include <chrono>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <thread>

#include "http_test_client.h"
#include "server/http_server.h"
#include "test_support.h"

namespace tessera::server {
namespace {

using nlohmann::json;
using tessera::testing::http_request;

// The value of one sample line `name` (with its labels, if any) in an exposition.
double sample(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  EXPECT_NE(at, std::string::npos) << name;
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + name.size() + 2));
}

std::vector<int32_t> ids(int n, int32_t first) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  v[0] = 1;
  std::iota(v.begin() + 1, v.end(), first);
  return v;
}

TEST(ServerMetricsTest, EveryCounterMatchesAScriptedWorkload) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  EngineOptions eo;
  eo.model = path;
  eo.ctx_size = 256;
  auto engine = Engine::create(eo);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  (*engine)->start();
  ServerConfig cfg;
  cfg.port = 0;
  cfg.served_model_name = "stories";
  auto srv = Server::create(**engine, cfg);
  ASSERT_TRUE(srv.ok());
  ASSERT_TRUE((*srv)->start().ok());
  const uint16_t port = (*srv)->port();
  auto complete = [&](const std::vector<int32_t>& prompt, int max_tokens) {
    const json body = {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"ignore_eos", true}};
    auto r = http_request(port, "POST", "/v1/completions", body.dump(), {{"Content-Type", "application/json"}});
    EXPECT_EQ(r.status, 200) << r.body;
  };
  const auto c = ids(40, 10);
  complete(c, 4);                                                // 40 prompt tokens, none cached
  complete(c, 4);                                                // 32 of 40 cached
  complete(std::vector<int32_t>(c.begin(), c.begin() + 33), 2);  // 32 of 33 cached
  // Two 400s (bad field, bad JSON) and one 404.
  EXPECT_EQ(http_request(port, "POST", "/v1/completions", R"({"prompt":[1,2],"max_tokens":-5})").status, 400);
  EXPECT_EQ(http_request(port, "POST", "/v1/completions", "{").status, 400);
  EXPECT_EQ(http_request(port, "GET", "/nope", "").status, 404);
  {  // A stream the client drops after its first token: aborted, not a success.
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::socket sock(ioc);
    sock.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    const std::string body =
        json{{"prompt", ids(11, 200)}, {"max_tokens", 200}, {"ignore_eos", true}, {"stream", true}}.dump();
    const std::string req =
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    boost::asio::write(sock, boost::asio::buffer(req));
    // Read until the first token's event, so the request was admitted and ran.
    std::string got;
    char buf[256];
    while (got.find("data: {") == std::string::npos) got.append(buf, sock.read_some(boost::asio::buffer(buf)));
  }
  for (int i = 0; i < 500 && (*engine)->metrics().finished_cancelled < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (int i = 0; i < 500 && (*srv)->state().in_flight.load() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));

  const EngineMetrics em = (*engine)->metrics();
  auto r = http_request(port, "GET", "/metrics", "");
  ASSERT_EQ(r.status, 200);
  const std::string& t = r.body;
  // Engine counters: known counts, and the same numbers as Engine::metrics().
  EXPECT_EQ(em.prefix_query_tokens, 40 + 40 + 33 + 11);
  EXPECT_EQ(em.prefix_hit_tokens, 32 + 32);
  EXPECT_EQ(em.finished_length, 3);
  EXPECT_EQ(em.finished_stop, 0);
  EXPECT_EQ(em.finished_cancelled, 1);
  EXPECT_EQ(em.finished_error, 0);
  EXPECT_EQ(em.preemptions, 0);
  EXPECT_GE(em.generated_tokens, 4 + 4 + 2 + 1);  // the stream's count depends on when the drop was seen
  EXPECT_EQ(sample(t, "tessera_prefix_cache_queries_total"), static_cast<double>(em.prefix_query_tokens));
  EXPECT_EQ(sample(t, "tessera_prefix_cache_hits_total"), static_cast<double>(em.prefix_hit_tokens));
  EXPECT_EQ(sample(t, "tessera_generation_tokens_total"), static_cast<double>(em.generated_tokens));
  EXPECT_EQ(sample(t, "tessera_prompt_tokens_computed_total"), static_cast<double>(em.prompt_tokens_computed));
  EXPECT_GE(em.prompt_tokens_computed, 40 + 8 + 1 + 11);
  EXPECT_EQ(sample(t, "tessera_num_preemptions_total"), 0);
  EXPECT_EQ(sample(t, "tessera_request_success_total{finished_reason=\"length\"}"), 3);
  EXPECT_EQ(sample(t, "tessera_request_success_total{finished_reason=\"stop\"}"), 0);
  EXPECT_EQ(t.find("finished_reason=\"abort\""), std::string::npos);
  EXPECT_EQ(sample(t, "tessera_request_aborted_total"), 1);
  EXPECT_EQ(sample(t, "tessera_request_failed_total"), 0);
  // Server counters: successful requests only.
  EXPECT_EQ(sample(t, "tessera_prompt_tokens_total"), 40 + 40 + 33);
  EXPECT_EQ(sample(t, "tessera_cached_prompt_tokens_total"), 32 + 32);
  EXPECT_EQ(sample(t, "tessera_http_errors_total{class=\"4xx\"}"), 3);
  EXPECT_EQ(sample(t, "tessera_http_errors_total{class=\"5xx\"}"), 0);
  // One observation per successful request; inter-token gaps: 3 + 3 + 1.
  for (const char* h : {"tessera_time_to_first_token_seconds", "tessera_time_per_output_token_seconds",
                        "tessera_e2e_request_latency_seconds", "tessera_request_queue_time_seconds"}) {
    EXPECT_EQ(sample(t, std::string(h) + "_count"), 3) << h;
    EXPECT_EQ(sample(t, std::string(h) + "_bucket{le=\"+Inf\"}"), 3) << h;
  }
  EXPECT_EQ(sample(t, "tessera_inter_token_latency_seconds_count"), 3 + 3 + 1);
  // Gauges once idle: the cached blocks are evictable, so none counts as used.
  EXPECT_EQ(sample(t, "tessera_num_requests_running"), 0);
  EXPECT_EQ(sample(t, "tessera_num_requests_waiting"), 0);
  EXPECT_EQ(sample(t, "tessera_kv_cache_usage_perc"), 0);
  EXPECT_EQ(sample(t, "tessera_spec_decode_num_draft_tokens_total"), 0);
  EXPECT_EQ(sample(t, "tessera_spec_decode_num_accepted_tokens_total"), 0);
  EXPECT_EQ(sample(t, "tessera_spec_decode_num_drafts_total"), 0);
  EXPECT_EQ(sample(t, "tessera_spec_decode_declined_steps_total"), 0);
  EXPECT_EQ(sample(t, "tessera_spec_decode_draft_seconds_total"), 0);
  (*srv)->stop(std::chrono::milliseconds(0));
  (*engine)->stop();
}

}  // namespace
}  // namespace tessera::server
