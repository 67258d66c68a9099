// Connections under load (issue #17) on an engine and server of its own:
// 400 idle and slow-header ("slowloris") connections on loopback while
// /health and a real completion still answer; the server closes every one
// of them once the header timeout has passed; a keep-alive connection
// survives an idle gap longer than the header timeout but shorter than the
// idle timeout, and is closed after the idle timeout.
#include <gtest/gtest.h>

// clang-format off
#include <utility>  // before Boost 1.74 asio, whose awaitable.hpp uses std::exchange without it
#include <boost/asio.hpp>
// clang-format on
#include <sys/resource.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "http_test_client.h"
#include "server/http_server.h"
#include "test_support.h"

namespace tessera::server {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using tessera::testing::http_request;
using Clock = std::chrono::steady_clock;

// Whether the peer has closed `s` (a read returns EOF or an error rather than would-block).
bool closed_by_peer(asio::ip::tcp::socket& s) {
  boost::system::error_code ec;
  s.non_blocking(true, ec);
  char buf[512];
  for (;;) {
    const size_t n = s.read_some(asio::buffer(buf), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) return false;
    if (ec) return true;  // eof, reset
    (void)n;              // a response's bytes (none expected): keep reading
  }
}

// One request on an open keep-alive socket; the status code, or 0 if the connection failed.
int request_on(asio::ip::tcp::socket& s, const std::string& target) {
  boost::system::error_code ec;
  s.non_blocking(false, ec);
  const std::string req = "GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n";
  asio::write(s, asio::buffer(req), ec);
  if (ec) return 0;
  std::string got;
  char buf[4096];
  while (got.find("\r\n\r\n") == std::string::npos) {
    const size_t n = s.read_some(asio::buffer(buf), ec);
    if (ec) return 0;
    got.append(buf, n);
  }
  // Read the rest of the (Content-Length) body so the next request starts clean.
  const size_t cl = got.find("Content-Length: ");
  const size_t head = got.find("\r\n\r\n") + 4;
  const size_t len = cl == std::string::npos ? 0 : std::stoul(got.substr(cl + 16));
  while (got.size() < head + len) {
    const size_t n = s.read_some(asio::buffer(buf), ec);
    if (ec) return 0;
    got.append(buf, n);
  }
  return std::stoi(got.substr(9, 3));
}

TEST(ServerConnections, SlowlorisAndIdleConnectionsAreClosedAfterTheHeaderTimeout) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  // 400 client + 400 server sockets in this process.
  rlimit lim{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  if (lim.rlim_cur < 2048) {
    lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, 2048);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0);
  }
  ASSERT_GE(lim.rlim_cur, 1024u) << "too few file descriptors for this test";
  EngineOptions eo;
  eo.model = path;
  eo.ctx_size = 256;
  auto engine = Engine::create(eo);
  ASSERT_TRUE(engine.ok());
  (*engine)->start();
  ServerConfig cfg;
  cfg.port = 0;
  cfg.served_model_name = "stories";
  cfg.header_timeout_s = 1.0;
  cfg.idle_timeout_s = 2.5;
  auto srv = Server::create(**engine, cfg);
  ASSERT_TRUE(srv.ok());
  ASSERT_TRUE((*srv)->start().ok());
  const uint16_t port = (*srv)->port();
  const asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);

  asio::io_context ioc;
  constexpr int kIdle = 200, kSlow = 200;
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> idle, slow;
  const auto t0 = Clock::now();
  for (int i = 0; i < kIdle + kSlow; ++i) {
    auto s = std::make_unique<asio::ip::tcp::socket>(ioc);
    s->connect(ep);
    if (i < kIdle) {
      idle.push_back(std::move(s));
    } else {
      asio::write(*s, asio::buffer(std::string("POST /v1/completions HTTP/1.1\r\nHost: x\r\n")));
      slow.push_back(std::move(s));
    }
  }
  // The server still answers while they are open.
  EXPECT_EQ(http_request(port, "GET", "/health", "").status, 200);
  auto c = http_request(port, "POST", "/v1/completions", R"({"prompt":"Once upon a time","max_tokens":8})",
                        {{"Content-Type", "application/json"}});
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_FALSE(json::parse(c.body)["choices"][0]["text"].get<std::string>().empty());
  // The slow clients keep sending a header line every 100 ms for 2 s (twice the header timeout).
  int trickled = 0;
  while (Clock::now() - t0 < std::chrono::milliseconds(2000)) {
    for (auto& s : slow) {
      boost::system::error_code ec;
      asio::write(*s, asio::buffer(std::string("X-Slow: 1\r\n")), ec);
    }
    ++trickled;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(trickled, 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int idle_closed = 0, slow_closed = 0;
  for (auto& s : idle) idle_closed += closed_by_peer(*s);
  for (auto& s : slow) slow_closed += closed_by_peer(*s);
  EXPECT_EQ(idle_closed, kIdle) << "connections that never sent a header";
  EXPECT_EQ(slow_closed, kSlow) << "slow-header connections";
  EXPECT_EQ(http_request(port, "GET", "/health", "").status, 200);

  // Keep-alive: an idle gap of 1.5 s (past the header timeout, inside the
  // idle timeout) keeps the connection; 3 s idle closes it.
  asio::ip::tcp::socket ka(ioc);
  ka.connect(ep);
  ASSERT_EQ(request_on(ka, "/health"), 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(request_on(ka, "/health"), 200) << "closed before the idle timeout";
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  EXPECT_TRUE(closed_by_peer(ka)) << "still open after the idle timeout";
  (*srv)->stop(std::chrono::milliseconds(0));
  (*engine)->stop();
}

}  // namespace
}  // namespace tessera::server
