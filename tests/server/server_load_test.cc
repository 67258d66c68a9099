// 1,000 concurrent connections on loopback (issue #17) against an engine and
// server of their own: 650 streaming completions (max_tokens 4), 150 more
// (max_tokens 240) whose clients disconnect right after their first event,
// plus 200 connections that
// only send /health. Every request is written before any answer is read, so
// all of them are in the server at once. With max_queue 256 (the cap on
// admitted requests, running + waiting) the server sheds the excess with
// 429 rate_limit_error (README "Load shedding"). Checked: every connection
// gets a definite answer (a 200 stream ending in `data: [DONE]`, a 200 that
// the client itself cut after its first event, or a 429 with an OpenAI error
// body and Retry-After); /health answers 200 throughout from a second
// client; afterwards the engine has no running or waiting request, no KV
// block in use (prefix-cached blocks are unreferenced, so they count as
// free), the server's in-flight count is 0, and success + aborted in the
// engine's counters equals the streams admitted.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "http_test_client.h"
#include "server/http_server.h"
#include "test_support.h"

namespace tessera::server {
namespace {

using nlohmann::json;
using tessera::testing::http_request;
using Clock = std::chrono::steady_clock;

enum class Kind { kStream, kStreamCut, kHealth };

struct Client {
  int fd = -1;
  Kind kind = Kind::kStream;
  std::string out;  // request bytes not yet written
  std::string in;   // response bytes so far
  bool done = false;
};

int connect_loopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

std::string post(const std::string& target, const std::string& body) {
  return "POST " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// A chunked (or Content-Length) HTTP/1.1 response split into status, headers and de-chunked body.
struct Parsed {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  bool complete = false;
};

Parsed parse_response(const std::string& raw) {
  Parsed p;
  const size_t head = raw.find("\r\n\r\n");
  if (raw.size() < 12 || head == std::string::npos) return p;
  p.status = std::atoi(raw.substr(9, 3).c_str());
  size_t at = raw.find("\r\n") + 2;
  while (at < head) {
    const size_t eol = raw.find("\r\n", at);
    const std::string line = raw.substr(at, eol - at);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      p.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    at = eol + 2;
  }
  std::string rest = raw.substr(head + 4);
  if (p.headers["transfer-encoding"] == "chunked") {
    size_t i = 0;
    for (;;) {
      const size_t eol = rest.find("\r\n", i);
      if (eol == std::string::npos) return p;
      const size_t n = std::stoul(rest.substr(i, eol - i), nullptr, 16);
      if (n == 0) {
        p.complete = true;
        return p;
      }
      if (eol + 2 + n > rest.size()) return p;
      p.body += rest.substr(eol + 2, n);
      i = eol + 2 + n + 2;
    }
  }
  p.body = std::move(rest);
  p.complete = p.headers.count("content-length") && p.body.size() == std::stoul(p.headers["content-length"]);
  return p;
}

// The value of an unlabelled Prometheus sample `name` in `text`; -1 when absent.
double metric(const std::string& text, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + key.size()));
}

TEST(ServerLoad, ThousandConnectionsWithStreamsAndDisconnectsLeaveNothingBehind) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  // 1,000 client + 1,000 server sockets (+ the health client's) in this process.
  rlimit lim{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  if (lim.rlim_cur < 4096) {
    lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, 4096);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0);
  }
  ASSERT_GE(lim.rlim_cur, 2200u) << "too few file descriptors for this test";
  EngineOptions eo;
  eo.model = path;
  eo.ctx_size = 256;
  auto engine = Engine::create(eo);
  ASSERT_TRUE(engine.ok());
  (*engine)->start();
  ServerConfig cfg;
  cfg.port = 0;
  cfg.served_model_name = "stories";
  cfg.max_queue = 256;
  cfg.header_timeout_s = 30;  // all requests are written at once; none should time out here
  auto srv = Server::create(**engine, cfg);
  ASSERT_TRUE(srv.ok());
  ASSERT_TRUE((*srv)->start().ok());
  const uint16_t port = (*srv)->port();

  constexpr int kStreams = 650, kCut = 150, kHealth = 200;
  std::vector<Client> clients(kStreams + kCut + kHealth);
  for (size_t i = 0; i < clients.size(); ++i) {
    Client& c = clients[i];
    // Interleave the kinds so the cut streams and /health calls meet admitted and shed streams alike.
    const size_t r = i % 20;
    c.kind = r < 13 ? Kind::kStream : r < 16 ? Kind::kStreamCut : Kind::kHealth;
    const std::string prompt = i % 2 ? "Once upon a time" : "The little dog";
    c.out = c.kind == Kind::kHealth ? std::string("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                                    : post("/v1/completions", json{{"prompt", prompt},
                                                                   {"max_tokens", 4},
                                                                   {"ignore_eos", true},
                                                                   {"stream", true},
                                                                   {"seed", static_cast<int64_t>(i)}}
                                                                  .dump());
  }
  // Open all connections first, then write every request, then read: all are concurrent.
  for (auto& c : clients) {
    c.fd = connect_loopback(port);
    ASSERT_GE(c.fd, 0) << "connect failed: " << std::strerror(errno);
  }

  std::atomic<bool> storm{true};
  std::atomic<int> health_ok{0}, health_bad{0};
  std::thread health([&] {
    while (storm.load()) {
      const auto h = http_request(port, "GET", "/health", "");
      ++(h.status == 200 ? health_ok : health_bad);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });

  const auto deadline = Clock::now() + std::chrono::seconds(45);
  size_t open = clients.size();
  std::vector<pollfd> pfds;
  while (open > 0 && Clock::now() < deadline) {
    pfds.clear();
    std::vector<size_t> idx;
    for (size_t i = 0; i < clients.size(); ++i) {
      if (clients[i].done) continue;
      pfds.push_back({clients[i].fd, static_cast<short>(POLLIN | (clients[i].out.empty() ? 0 : POLLOUT)), 0});
      idx.push_back(i);
    }
    if (::poll(pfds.data(), pfds.size(), 200) < 0) break;
    for (size_t k = 0; k < pfds.size(); ++k) {
      Client& c = clients[idx[k]];
      if ((pfds[k].revents & POLLOUT) && !c.out.empty()) {
        const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
        if (n > 0) c.out.erase(0, static_cast<size_t>(n));
      }
      if (!(pfds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[8192];
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) c.in.append(buf, static_cast<size_t>(n));
      const bool eof = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
      // A cut stream hangs up once its first event has arrived.
      const bool cut = c.kind == Kind::kStreamCut && c.in.find("data: ") != std::string::npos;
      if (eof || cut) {
        ::close(c.fd);
        c.done = true;
        --open;
      }
    }
  }
  storm = false;
  health.join();
  ASSERT_EQ(open, 0u) << "connections without a definite answer after 45 s";

  int streamed = 0, cut = 0, shed = 0, health_200 = 0;
  for (const auto& c : clients) {
    const Parsed p = parse_response(c.in);
    if (c.kind == Kind::kHealth) {
      EXPECT_EQ(p.status, 200) << c.in;
      health_200 += p.status == 200;
      continue;
    }
    if (p.status == 429) {
      ASSERT_TRUE(p.complete) << c.in;
      const auto e = json::parse(p.body);
      EXPECT_EQ(e["error"]["type"], "rate_limit_error") << p.body;
      EXPECT_TRUE(e["error"]["message"].is_string()) << p.body;
      EXPECT_EQ(p.headers.at("retry-after"), "1");
      ++shed;
      continue;
    }
    ASSERT_EQ(p.status, 200) << c.in;
    EXPECT_EQ(p.headers.at("content-type").rfind("text/event-stream", 0), 0u) << c.in;
    if (c.kind == Kind::kStreamCut) {
      ++cut;
      continue;
    }
    ASSERT_TRUE(p.complete) << c.in;
    const auto events = tessera::testing::sse_data(p.body);
    ASSERT_GE(events.size(), 2u) << p.body;
    EXPECT_EQ(events.back(), "[DONE]") << p.body;
    std::string text;
    for (size_t e = 0; e + 1 < events.size(); ++e) {
      const auto j = json::parse(events[e]);
      ASSERT_FALSE(j.contains("error")) << events[e];
      text += j["choices"][0]["text"].get<std::string>();
    }
    EXPECT_FALSE(text.empty()) << p.body;
    ++streamed;
  }
  EXPECT_EQ(health_200, kHealth);
  EXPECT_GT(health_ok.load(), 0) << "/health from the second client never answered during the storm";
  EXPECT_EQ(health_bad.load(), 0);
  EXPECT_GT(shed, 0) << "1,000 requests against max_queue 256 should shed some";
  EXPECT_GT(streamed, 0);
  std::printf("streams completed %d, cut by the client %d, shed with 429 %d; /health during the storm %d x 200\n",
              streamed, cut, shed, health_ok.load());

  // The cut streams are cancelled when the server sees the hang-up; wait for the engine to drain.
  std::string m;
  const auto drain = Clock::now() + std::chrono::seconds(10);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    m = http_request(port, "GET", "/metrics", "").body;
  } while ((metric(m, "tessera_num_requests_running") != 0 || metric(m, "tessera_num_requests_waiting") != 0 ||
            metric(m, "tessera_kv_cache_usage_perc") != 0 || (*srv)->state().in_flight.load() != 0) &&
           Clock::now() < drain);
  EXPECT_EQ(metric(m, "tessera_num_requests_running"), 0) << m;
  EXPECT_EQ(metric(m, "tessera_num_requests_waiting"), 0) << m;
  EXPECT_EQ(metric(m, "tessera_kv_cache_usage_perc"), 0) << m;
  EXPECT_EQ((*srv)->state().in_flight.load(), 0);
  const EngineMetrics em = (*engine)->metrics();
  EXPECT_EQ(em.kv_blocks_used, 0);
  EXPECT_EQ(em.finished_error, 0);
  // Every admitted stream ended exactly once: finished (stop or length) or cancelled.
  EXPECT_EQ(em.finished_stop + em.finished_length + em.finished_cancelled, streamed + cut);
  // The cut streams ask for 240 tokens, so most are still running when their client hangs up.
  EXPECT_GT(em.finished_cancelled, 0);
  EXPECT_LE(em.finished_cancelled, cut);
  std::printf("engine: finished stop %lld, length %lld, cancelled %lld\n", static_cast<long long>(em.finished_stop),
              static_cast<long long>(em.finished_length), static_cast<long long>(em.finished_cancelled));
  // And it still serves new requests.
  const auto after = http_request(port, "POST", "/v1/completions", R"({"prompt":"Once upon a time","max_tokens":4})",
                                  {{"Content-Type", "application/json"}});
  EXPECT_EQ(after.status, 200) << after.body;
  (*srv)->stop(std::chrono::milliseconds(0));
  (*engine)->stop();
}

}  // namespace
}  // namespace tessera::server
