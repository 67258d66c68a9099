// The server's request log: one line per finished HTTP request (the probes
// GET /health and GET /metrics excepted), written when its response has been
// sent, as text or as one JSON object per line (`tessera serve --log-format`).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace tessera::server {

enum class RequestLogFormat { kText, kJson };

// What one line says. Token counts are those of the response's `usage`
// (all prompts and choices); zero for routes that generate nothing.
struct RequestLogRecord {
  std::string request_id;  // the X-Request-Id echoed in the response
  std::string method;
  std::string path;  // without the query
  int status = 0;    // the HTTP status sent; 499 when the client went away first (nginx's convention)
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens reused from the prefix cache
  int64_t generated_tokens = 0;
  std::optional<double> ttft_ms;  // the engine's arrival -> first token; none when nothing was generated
  double e2e_ms = 0;              // request read -> response written, on the server
  std::string finish_reason;  // "stop", "length", "cancelled"; several choices: comma-separated in order; empty: none
};

// One line without the newline. Text:
//   request id=ID "METHOD PATH" STATUS prompt=P cached=C generated=G ttft_ms=T e2e_ms=E finish=F
// (`-` for an absent TTFT or finish reason). JSON: {"time" (UTC, RFC 3339 with
// milliseconds), "request_id", "method", "path", "status", "prompt_tokens",
// "cached_tokens", "generated_tokens", "ttft_ms" (null when absent), "e2e_ms",
// "finish_reason" (null when absent)}.
std::string format_request_log(const RequestLogRecord& r, RequestLogFormat format,
                               std::chrono::system_clock::time_point now);

// Writes whole lines to `out` (not owned; one fwrite each, so lines from
// several io threads never interleave). Thread-safe.
class RequestLog {
 public:
  RequestLog(RequestLogFormat format, std::FILE* out) : format_(format), out_(out) {}
  void write(const RequestLogRecord& r) const;

 private:
  RequestLogFormat format_;
  std::FILE* out_;
};

}  // namespace tessera::server
