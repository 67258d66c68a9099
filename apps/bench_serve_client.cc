#include "bench_serve_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>  // before Boost 1.74 asio, whose awaitable.hpp uses std::exchange without it

namespace tessera::cli {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

http::request<http::string_body> make_request(const ServerUrl& url, const std::string& method, const std::string& path,
                                              const std::string& body) {
  http::request<http::string_body> req(http::string_to_verb(method), url.prefix + path, 11);
  req.set(http::field::host, url.host);
  req.set(http::field::connection, "close");
  if (!url.api_key.empty()) req.set(http::field::authorization, "Bearer " + url.api_key);
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.prepare_payload();
  return req;
}

void connect(const ServerUrl& url, asio::io_context& ioc, tcp::socket& sock) {
  tcp::resolver resolver(ioc);
  asio::connect(sock, resolver.resolve(url.host, url.port));
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Parses one SSE event; updates `t`. Returns true on `[DONE]`.
bool on_event(const std::string& event, double now, double& last_text, StreamTiming& t) {
  if (event.rfind("data: ", 0) != 0) return false;
  const std::string data = event.substr(6);
  if (data == "[DONE]") return true;
  auto j = nlohmann::json::parse(data, nullptr, false);
  if (j.is_discarded()) return false;
  if (j.contains("usage") && j["usage"].is_object()) {
    t.prompt_tokens = j["usage"].value("prompt_tokens", int64_t{0});
    t.completion_tokens = j["usage"].value("completion_tokens", int64_t{0});
  }
  if (j.contains("error")) t.error = j["error"].dump();
  bool text = false;
  if (j.contains("choices") && j["choices"].is_array()) {
    for (const auto& c : j["choices"]) {
      if (c.contains("text") && c["text"].is_string() && !c["text"].get_ref<const std::string&>().empty()) text = true;
    }
  }
  if (text) {
    if (last_text < 0) {
      t.ttft = now;
    } else {
      t.itl.push_back(now - last_text);
    }
    last_text = now;
  }
  return false;
}

}  // namespace

Result<ServerUrl> parse_server_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return invalid_argument("--url must start with http:// (got '" + url + "')");
  std::string rest = url.substr(scheme.size());
  ServerUrl u;
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    u.prefix = rest.substr(slash);
    rest.resize(slash);
  }
  while (!u.prefix.empty() && u.prefix.back() == '/') u.prefix.pop_back();
  if (u.prefix == "/v1") u.prefix.clear();  // accept the OpenAI base URL too
  if (auto colon = rest.rfind(':'); colon != std::string::npos) {
    u.port = rest.substr(colon + 1);
    rest.resize(colon);
  }
  u.host = rest;
  if (u.host.empty() || u.port.empty()) return invalid_argument("--url: no host or port in '" + url + "'");
  return u;
}

Result<HttpReply> http_call(const ServerUrl& url, const std::string& method, const std::string& path,
                            const std::string& body) {
  try {
    asio::io_context ioc;
    tcp::socket sock(ioc);
    connect(url, ioc, sock);
    http::write(sock, make_request(url, method, path, body));
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(sock, buffer, res);
    return HttpReply{static_cast<int>(res.result_int()), res.body()};
  } catch (const std::exception& e) {
    return not_found(url.host + ":" + url.port + ": " + e.what());
  }
}

StreamTiming stream_completion(const ServerUrl& url, const std::string& body) {
  StreamTiming t;
  const auto t0 = Clock::now();
  try {
    asio::io_context ioc;
    tcp::socket sock(ioc);
    connect(url, ioc, sock);
    http::write(sock, make_request(url, "POST", "/v1/completions", body));
    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    // No limit on a stream's length. Not boost::none: Boost 1.74 compares a
    // Content-Length against an empty optional as "over the limit".
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    http::read_header(sock, buffer, parser);
    const int status = static_cast<int>(parser.get().result_int());
    if (status != 200) {
      // An error answer is a small JSON body: read it whole as a string.
      http::response_parser<http::string_body> error_parser(std::move(parser));
      beast::error_code ec;
      http::read(sock, buffer, error_parser, ec);
      t.e2e = seconds_since(t0);
      t.error = "HTTP " + std::to_string(status) + ": " + error_parser.get().body().substr(0, 200);
      return t;
    }
    std::string pending;  // bytes of events not yet terminated by a blank line
    double last_text = -1;
    bool done = false;
    char chunk[16384];
    while (!parser.is_done()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof chunk;
      beast::error_code ec;
      http::read_some(sock, buffer, parser, ec);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) throw beast::system_error(ec);
      const size_t n = sizeof chunk - parser.get().body().size;
      pending.append(chunk, n);
      const double now = seconds_since(t0);
      for (size_t end; (end = pending.find("\n\n")) != std::string::npos;) {
        done = on_event(pending.substr(0, end), now, last_text, t) || done;
        pending.erase(0, end + 2);
      }
    }
    t.e2e = seconds_since(t0);
    if (!done) {
      t.error = "stream ended without [DONE]" + (t.error.empty() ? "" : ": " + t.error);
    } else if (t.error.empty()) {
      t.ok = true;
    }
  } catch (const std::exception& e) {
    t.e2e = seconds_since(t0);
    t.error = e.what();
  }
  return t;
}

}  // namespace tessera::cli
