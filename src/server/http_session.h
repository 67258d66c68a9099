// One HTTP/1.1 connection (keep-alive): reads requests, routes them, and for
// completions runs a CompletionJob against the engine, streaming SSE over
// chunked transfer encoding (RFC 9112 section 7.1) when asked. While a job
// runs the connection keeps a read pending, so a client that disconnects is
// noticed at once and its engine requests are cancelled.
#pragma once

#include <utility>  // before Boost 1.74 asio, whose awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/completion_job.h"
#include "server/http_server.h"
#include "server/simple_routes.h"

namespace tessera::server {

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket&& socket, std::shared_ptr<ServerState> state);
  // Starts reading requests (on the connection's strand).
  void run();

 private:
  struct EngineEvent;
  using Request = boost::beast::http::request<boost::beast::http::string_body>;

  void do_read();
  void on_read(boost::beast::error_code ec);
  void handle(Request req);
  void send(Reply reply);
  void start_job(ParsedRequest request);
  void on_engine_event(size_t prompt, const std::shared_ptr<EngineEvent>& ev);
  void on_job_done();
  void write_chunk(std::string data);
  void do_write();
  void watch();
  void response_complete();
  void client_gone();
  void close();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::shared_ptr<ServerState> state_;
  bool keep_alive_ = true;
  std::unique_ptr<CompletionJob> job_;
  std::vector<uint64_t> job_ids_;  // engine ids of the job's prompts
  size_t pending_ = 0;             // job prompts not yet finished
  std::optional<ApiError> submit_error_;
  std::deque<std::string> writes_;
  bool writing_ = false;
  bool stream_ending_ = false;  // last chunk queued; complete once written
  bool watching_ = false;
  bool resume_after_watch_ = false;
  bool closed_ = false;
};

}  // namespace tessera::server
