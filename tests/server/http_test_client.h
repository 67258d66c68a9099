// A tiny blocking HTTP/1.1 client (Boost.Beast) for the server tests.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tessera::testing {

struct HttpResponse {
  int status = 0;
  std::string body;  // de-chunked
  std::map<std::string, std::string> headers;
};

// Sends one request on a fresh connection and reads the whole response.
HttpResponse http_request(uint16_t port, const std::string& method, const std::string& target, const std::string& body,
                          const std::map<std::string, std::string>& headers = {});
// The `data:` payloads of a server-sent-events body, in order.
std::vector<std::string> sse_data(const std::string& body);

}  // namespace tessera::testing
