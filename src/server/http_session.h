// One HTTP/1.1 connection (keep-alive): reads requests, routes them, and for
// completions runs a CompletionJob against the engine, streaming SSE over
// chunked transfer encoding (RFC 9112 section 7.1) when asked. While a job
// runs the connection keeps a read pending, so a client that disconnects is
// noticed at once and its engine requests are cancelled.
//
// Engine events reach the strand in batches: the engine thread appends them
// to a small locked inbox and posts one drain handler only when none is
// pending, and everything a drain produces goes out in one socket write. So
// under load the io_context queue holds at most one engine handler per
// connection, however many steps the engine runs ahead, and a /health or
// /metrics request waits behind a bounded amount of work.
#pragma once

// clang-format off
#include <utility>  // before Boost 1.74 asio, whose awaitable.hpp uses std::exchange without it
#include <boost/asio.hpp>
#include <boost/beast.hpp>
// clang-format on

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/completion_job.h"
#include "server/http_server.h"
#include "server/prompt_scores.h"
#include "server/request_log.h"
#include "server/simple_routes.h"

namespace tessera::server {

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket&& socket, std::shared_ptr<ServerState> state);
  // Starts reading requests (on the connection's strand).
  void run();

 private:
  // A copy of one engine event, made on the engine thread and read on the strand.
  struct EngineEvent {
    size_t prompt = 0;  // index into the job's prompts
    StreamEvent step;   // its logprobs pointer is re-pointed at `logprobs` on the strand
    std::optional<TokenLogprobs> logprobs;
    std::vector<PromptTokenScore> prompt_scores;  // scored on the engine thread from its prompt logits
    bool finished = false;
    std::vector<ChoiceResult> results;
    RequestMetrics metrics;
    Status error;
    bool cancelled = false;
  };
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  static constexpr std::chrono::seconds kBodyTimeout{300};  // a body (after its header) within this

  // Between requests: waits up to the idle timeout for the next request's first byte.
  void do_read();
  // Reads a request: the header within the header timeout, then the body within kBodyTimeout.
  void read_header();
  void on_read(boost::beast::error_code ec);
  void handle(Request req);
  // Starts the request log's record of `req` (its X-Request-Id or a generated id).
  void begin_log(const Request& req);
  // Writes the record (once) with the status sent, unless the route is a probe.
  void end_log(int status);
  void send(Reply reply);
  void start_job(ParsedRequest request);
  // Engine thread: queues `ev` for the strand.
  void enqueue_event(EngineEvent ev);
  // Strand: handles every queued event, then writes what they produced.
  void drain_events();
  void on_engine_event(EngineEvent& ev);
  void on_job_done();
  // Appends one chunk of the chunked body to out_ (sent by the next do_write).
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
  std::string out_;      // bytes queued for the socket
  std::string sending_;  // bytes of the async_write in progress
  bool writing_ = false;
  bool stream_ending_ = false;  // last chunk queued; complete once written
  bool watching_ = false;
  bool resume_after_watch_ = false;
  bool closed_ = false;

  RequestLogRecord log_;  // the current request's log line (its request_id also answers X-Request-Id)
  std::chrono::steady_clock::time_point log_start_;
  bool log_open_ = false;  // begin_log() ran and end_log() has not
  // The status of a response whose last byte has been handed to the socket
  // (0: not yet), and whether a write failed: close() logs a response the
  // client was fully given with its status even when the client's close is
  // seen before the write's completion handler runs.
  int handed_status_ = 0;
  bool write_failed_ = false;
  bool job_cancelled_ = false;  // a choice of the current job ended cancelled

  std::mutex events_mu_;             // guards events_ and drain_posted_ (engine thread vs strand)
  std::vector<EngineEvent> events_;  // engine events not yet handled on the strand
  bool drain_posted_ = false;        // a drain_events() handler is queued
};

}  // namespace tessera::server
