#include "http_test_client.h"

#include <utility>  // before Boost 1.74 asio, whose awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>
#include <boost/beast.hpp>

namespace tessera::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

HttpResponse http_request(uint16_t port, const std::string& method, const std::string& target, const std::string& body,
                          const std::map<std::string, std::string>& headers) {
  asio::io_context ioc;
  asio::ip::tcp::socket socket(ioc);
  socket.connect({asio::ip::make_address("127.0.0.1"), port});
  http::request<http::string_body> req(http::string_to_verb(method), target, 11);
  req.set(http::field::host, "127.0.0.1");
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  http::write(socket, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1 << 26);
  beast::error_code ec;
  http::read(socket, buffer, parser, ec);
  HttpResponse out;
  if (ec) return out;
  const auto& res = parser.get();
  out.status = static_cast<int>(res.result_int());
  out.body = res.body();
  for (const auto& f : res) out.headers[std::string(f.name_string())] = std::string(f.value());
  socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  return out;
}

std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    const std::string event = body.substr(pos, end - pos);
    if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
    pos = end + 2;
  }
  return out;
}

}  // namespace tessera::testing
