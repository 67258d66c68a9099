// The OpenAI-compatible HTTP server: a Boost.Beast / Asio listener with a
// small io_context thread pool; each connection runs on its own strand and
// talks to the engine only through the public API (tessera/engine.h:
// submit, cancel, metrics, the vocabulary; thread-safe). Engine
// callbacks (engine thread) hand their data to the connection's strand with
// asio::post, so a slow client never blocks the engine.
//
// Routes: POST /v1/completions, POST /v1/chat/completions (JSON or SSE),
// GET /v1/models, GET /health, GET /metrics (Prometheus text format),
// POST /tokenize, POST /detokenize; GET / (the chat web UI, unless turned off).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/openai_protocol.h"
#include "server/request_id.h"
#include "server/request_log.h"
#include "server/server_metrics.h"
#include "tessera/chat.h"
#include "tessera/engine.h"

namespace tessera::server {

struct ServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;               // 0: an ephemeral port (see Server::port())
  std::string served_model_name;      // the `model` clients use; empty: the model file's name
  std::string api_key;                // non-empty: /v1/*, /tokenize and /detokenize need `Authorization: Bearer KEY`
  int32_t max_queue = 512;            // requests admitted at once (running + waiting); beyond: 429
  uint64_t max_body_bytes = 1 << 20;  // larger bodies: 413
  int io_threads = 2;
  std::string chat_template;  // Jinja source; empty: the model's own
  bool webui = true;          // serve the chat web UI at GET / (the page needs no API key)
  // A request's header must be complete within header_timeout_s of the
  // connection opening (or of its first byte on a kept-alive connection),
  // however slowly it arrives; a kept-alive connection may stay silent
  // between requests for idle_timeout_s. Past either, the socket is closed.
  double header_timeout_s = 10;
  double idle_timeout_s = 60;
  RequestDefaults request_defaults;  // sampling fields a request leaves out (openai_protocol.h)
  // Set: one line per finished request (request_log.h) on request_log_file (null: stderr).
  std::optional<RequestLogFormat> request_log;
  std::FILE* request_log_file = nullptr;
};

// State shared by every connection (thread-safe members only).
struct ServerState {
  Engine* engine = nullptr;
  ServerConfig config;
  std::unique_ptr<ChatFormatter> chat;  // null: the model has no chat template (chat is refused)
  ProtocolContext protocol;
  ServerMetrics metrics;
  std::atomic<int32_t> in_flight{0};  // engine requests submitted and not yet finished
  std::atomic<bool> stopping{false};  // shutting down: no new completions (503), connections close
  std::atomic<bool> cancelled_on_stop{
      false};  // stop() cancelled what was still running: streams end with an error event
  RequestIdGenerator request_ids;         // X-Request-Id when the client sends none
  std::optional<RequestLog> request_log;  // from config.request_log
  std::mutex mu;              // guards active
  std::set<uint64_t> active;  // engine request ids in flight
};

class Server {
 public:
  // Borrows `engine` (started by the caller before start()). Errors:
  // a chat template that does not parse.
  static Result<std::unique_ptr<Server>> create(Engine& engine, ServerConfig config);
  ~Server();

  // Binds host:port, starts accepting and the io threads. Errors: bad
  // address, port in use.
  Status start();
  // The bound port (after start()).
  uint16_t port() const { return port_; }
  const ServerState& state() const { return *state_; }
  // Graceful shutdown, first half (SIGTERM): stops accepting connections,
  // answers new completions on open connections with 503 (and closes them
  // after their response), and waits until every running request has
  // finished or `timeout` has passed. Returns the requests still running
  // (stop() then cancels them). Call stop() afterwards.
  int32_t drain(std::chrono::milliseconds timeout);
  // Stops accepting, cancels every running request (a stream gets a final
  // error event, "the server is shutting down"), waits up to `grace` for
  // their connections to finish, then stops the io threads. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

 private:
  Server() = default;
  void stop_accepting();  // closes the acceptor, sets ServerState::stopping
  struct Impl;
  std::shared_ptr<ServerState> state_;
  std::unique_ptr<Impl> impl_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
  bool stopped_ = false;
  bool accepting_stopped_ = false;
};

}  // namespace tessera::server
