// A small blocking HTTP/1.1 client (Boost.Beast) for `tessera bench-serve`:
// plain JSON requests and streaming /v1/completions with per-event timestamps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/status.h"

namespace tessera::cli {

// http://HOST[:PORT][/PREFIX] split into parts; `prefix` has no trailing '/'.
struct ServerUrl {
  std::string host;
  std::string port = "80";
  std::string prefix;
  std::string api_key;  // sent as `Authorization: Bearer KEY` when not empty
};
Result<ServerUrl> parse_server_url(const std::string& url);

struct HttpReply {
  int status = 0;
  std::string body;
};
// One request on a fresh connection; kNotFound when the server cannot be reached.
Result<HttpReply> http_call(const ServerUrl& url, const std::string& method, const std::string& path,
                            const std::string& body);

// What one streamed completion measured. Times are seconds from sending the request.
struct StreamTiming {
  bool ok = false;
  std::string error;          // set when !ok: HTTP status and body, or the transport error
  double ttft = 0;            // first event carrying text
  double e2e = 0;             // `data: [DONE]`
  std::vector<double> itl;    // gaps between successive text events
  int64_t prompt_tokens = 0;  // from the usage chunk
  int64_t completion_tokens = 0;
};
// POSTs `body` (a JSON request with "stream": true) to PREFIX/v1/completions and
// reads the server-sent events as they arrive.
StreamTiming stream_completion(const ServerUrl& url, const std::string& body);

}  // namespace tessera::cli
