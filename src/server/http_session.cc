#include "server/http_session.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <chrono>

#include "server/webui_route.h"

namespace tessera::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using nlohmann::json;

HttpSession::HttpSession(asio::ip::tcp::socket&& socket, std::shared_ptr<ServerState> state)
    : stream_(std::move(socket)), state_(std::move(state)) {}

namespace {
std::chrono::milliseconds seconds_to_ms(double s) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, s) * 1000.0));
}
}  // namespace

void HttpSession::run() {
  // A new connection's first header must be complete within the header timeout.
  asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
}

void HttpSession::do_read() {
  if (closed_) return;
  if (buffer_.size() > 0) return read_header();  // the next request's bytes are already here
  // Keep-alive: the next request's first byte within the idle timeout.
  stream_.expires_after(seconds_to_ms(state_->config.idle_timeout_s));
  stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, size_t n) {
    if (ec) return self->close();  // idle timeout (the stream closed the socket), or the client left
    self->buffer_.commit(n);
    self->read_header();
  });
}

void HttpSession::read_header() {
  if (closed_) return;
  parser_.emplace();
  parser_->body_limit(state_->config.max_body_bytes);
  // The whole header within the header timeout, however slowly it trickles
  // in (the deadline is absolute: slowloris clients are closed); the body
  // then gets kBodyTimeout.
  stream_.expires_after(seconds_to_ms(state_->config.header_timeout_s));
  http::async_read_header(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
    if (ec || self->parser_->is_done()) return self->on_read(ec);
    self->stream_.expires_after(kBodyTimeout);
    http::async_read(self->stream_, self->buffer_, *self->parser_,
                     [self](beast::error_code ec2, size_t) { self->on_read(ec2); });
  });
}

void HttpSession::on_read(beast::error_code ec) {
  stream_.expires_after(kBodyTimeout);  // the response's write (a job's stream: expires_never)
  if (ec && ec != http::error::end_of_stream && parser_->is_header_done()) begin_log(parser_->get());
  if (ec == http::error::body_limit) {
    keep_alive_ = false;
    state_->metrics.count_error(413);
    return send(
        error_reply(ApiError{413,
                             "the request body exceeds " + std::to_string(state_->config.max_body_bytes) + " bytes",
                             "invalid_request_error",
                             {},
                             "request_too_large"}));
  }
  if (ec == http::error::partial_message) {
    // The client ended (or half-closed) mid-body, e.g. a truncated chunked body.
    keep_alive_ = false;
    return send(error_reply(
        bad_request("the request body ended before its declared length or last chunk", {}, "incomplete_body")));
  }
  if (ec && &ec.category() == &http::make_error_code(http::error::bad_chunk).category() &&
      ec != http::error::end_of_stream) {
    keep_alive_ = false;  // the framing is lost; answer and close
    return send(error_reply(bad_request("malformed HTTP request: " + ec.message(), {}, "bad_http")));
  }
  if (ec) return close();
  handle(parser_->release());
}

void HttpSession::begin_log(const Request& req) {
  log_ = RequestLogRecord{};
  handed_status_ = 0;
  log_start_ = std::chrono::steady_clock::now();
  log_open_ = true;
  const std::string_view target(req.target().data(), req.target().size());
  log_.path = std::string(target.substr(0, target.find('?')));
  log_.method = std::string(req.method_string());
  auto client_id = req.find("X-Request-Id");
  if (client_id != req.end() &&
      valid_request_id(std::string_view(client_id->value().data(), client_id->value().size()))) {
    log_.request_id = std::string(client_id->value());
  } else {
    log_.request_id = state_->request_ids.next();
  }
}

void HttpSession::end_log(int status) {
  if (!log_open_) return;
  log_open_ = false;
  if (!state_->request_log || log_.path == "/health" || log_.path == "/metrics") return;
  log_.status = status;
  log_.e2e_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - log_start_).count();
  state_->request_log->write(log_);
}

void HttpSession::handle(Request req) {
  keep_alive_ = req.keep_alive();
  begin_log(req);
  std::string_view target(req.target().data(), req.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const std::string_view method(req.method_string().data(), req.method_string().size());
  if (auto client_id = req.find("X-Request-Id");
      client_id != req.end() && !client_id->value().empty() &&
      !valid_request_id(std::string_view(client_id->value().data(), client_id->value().size()))) {
    return send(error_reply(
        bad_request("X-Request-Id must be 1 to " + std::to_string(kMaxRequestIdLength) + " visible ASCII characters",
                    {}, "invalid_request_id")));
  }
  if (auto page = handle_webui_route(method, path, state_->config)) return send(std::move(*page));
  const bool open = path == "/health" || path == "/metrics";
  if (!open && !state_->config.api_key.empty()) {
    auto auth = req.find(http::field::authorization);
    if (auth == req.end() || auth->value() != "Bearer " + state_->config.api_key) {
      return send(error_reply(ApiError{
          401, "missing or wrong API key (Authorization: Bearer KEY)", "authentication_error", {}, "invalid_api_key"}));
    }
  }
  if (method == "POST" && (path.starts_with("/v1/") || path == "/tokenize" || path == "/detokenize")) {
    // Bodies are JSON; a Content-Type naming anything else is refused (none at all is accepted).
    if (auto ct = req.find(http::field::content_type); ct != req.end()) {
      std::string media(ct->value().substr(0, ct->value().find(';')));
      while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.pop_back();
      for (char& c : media) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (media != "application/json") {
        return send(
            error_reply(ApiError{415,
                                 "Content-Type must be application/json, got '" + std::string(ct->value()) + "'",
                                 "invalid_request_error",
                                 {},
                                 "unsupported_media_type"}));
      }
    }
  }
  if (auto reply = handle_simple_route(method, path, req.body(), *state_)) return send(std::move(*reply));
  Endpoint endpoint;
  if (path == "/v1/completions") {
    endpoint = Endpoint::kCompletions;
  } else if (path == "/v1/chat/completions") {
    endpoint = Endpoint::kChat;
  } else {
    return send(error_reply(ApiError{404, "no route " + std::string(path), "invalid_request_error", {}, "not_found"}));
  }
  if (method != "POST") {
    return send(error_reply(
        ApiError{405, std::string(path) + " takes POST", "invalid_request_error", {}, "method_not_allowed"}));
  }
  if (state_->stopping.load())
    return send(error_reply(ApiError{503, "the server is shutting down", "server_error", {}, {}}));
  auto parsed = parse_request(req.body(), endpoint, state_->protocol);
  if (auto* e = std::get_if<ApiError>(&parsed)) return send(error_reply(*e));
  start_job(std::move(std::get<ParsedRequest>(parsed)));
}

void HttpSession::send(Reply reply) {
  if (reply.status >= 400) state_->metrics.count_error(reply.status);
  auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(reply.status), 11);
  res->set(http::field::server, "tessera");
  res->set(http::field::content_type, reply.content_type);
  for (const auto& [k, v] : reply.headers) res->set(k, v);
  if (state_->stopping.load()) keep_alive_ = false;  // draining: this connection's last response
  if (log_open_) res->set("X-Request-Id", log_.request_id);
  res->keep_alive(keep_alive_);
  res->body() = std::move(reply.body);
  res->prepare_payload();
  handed_status_ = reply.status;
  http::async_write(stream_, *res,
                    [self = shared_from_this(), res, status = reply.status](beast::error_code ec, size_t) {
                      if (ec) {
                        self->write_failed_ = true;
                        return self->close();
                      }
                      self->end_log(status);
                      self->response_complete();
                    });
}

void HttpSession::start_job(ParsedRequest request) {
  job_cancelled_ = false;
  const auto n_prompts = static_cast<int32_t>(request.prompts.size());
  if (state_->in_flight.load() + n_prompts > state_->config.max_queue) {
    return send(error_reply(
        ApiError{429,
                 "the server is at capacity (" + std::to_string(state_->config.max_queue) + " requests); retry later",
                 "rate_limit_error",
                 {},
                 "queue_full"}));
  }
  const bool chat = request.endpoint == Endpoint::kChat;
  const std::string id = fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", log_.request_id);
  const int64_t created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  job_ = std::make_unique<CompletionJob>(std::move(request), id, created, state_->engine->vocab());
  job_ids_.clear();
  pending_ = 0;
  submit_error_.reset();
  stream_ending_ = false;
  const ParsedRequest& req = job_->request();
  for (size_t p = 0; p < req.prompts.size(); ++p) {
    ++state_->in_flight;
    // Prompt scoring reads the prompt logits during the callback (they live only that long).
    auto scored = req.scores_prompt() ? std::make_shared<const std::vector<int32_t>>(req.prompts[p]) : nullptr;
    auto cb = [self = shared_from_this(), p, state = state_, scored, top_n = req.prompt_top_n(),
               n_vocab = state_->protocol.n_vocab](const RequestEvent& ev) {
      EngineEvent copy;
      copy.prompt = p;
      copy.finished = ev.request_finished;
      if (ev.prompt_logits != nullptr && scored) {
        score_prompt_rows(ev.prompt_logits, ev.prompt_logits_begin, ev.prompt_logits_rows, n_vocab, *scored,
                          std::max(top_n, 0), copy.prompt_scores);
        if (copy.prompt_scores.empty()) return;
        self->enqueue_event(std::move(copy));
        return;
      }
      if (ev.request_finished) {
        if (ev.results) copy.results = *ev.results;
        if (ev.metrics) copy.metrics = *ev.metrics;
        copy.error = ev.error;
        copy.cancelled = ev.cancelled;
      } else {
        copy.step = ev.step;
        if (ev.step.logprobs) copy.logprobs = *ev.step.logprobs;
        copy.step.logprobs = nullptr;
      }
      self->enqueue_event(std::move(copy));
      if (ev.request_finished) {
        {
          std::lock_guard<std::mutex> lock(state->mu);
          state->active.erase(ev.request_id);
        }
        --state->in_flight;
      }
    };
    auto rid = state_->engine->submit(req.prompts[p], req.options, std::move(cb));
    if (!rid.ok()) {
      --state_->in_flight;
      submit_error_ = status_error(rid.status(), chat ? "messages" : "prompt");
      for (uint64_t e : job_ids_) state_->engine->cancel(e);
      break;
    }
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->active.insert(*rid);
    }
    job_ids_.push_back(*rid);
    ++pending_;
  }
  if (pending_ == 0) {
    job_.reset();
    return send(error_reply(*submit_error_));
  }
  stream_.expires_never();
  if (job_->streaming() && !submit_error_) {
    out_ +=
        "HTTP/1.1 200 OK\r\nServer: tessera\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
        "Transfer-Encoding: chunked\r\n" +
        std::string(keep_alive_ ? "" : "Connection: close\r\n") + "X-Request-Id: " + log_.request_id + "\r\n\r\n";
    if (auto pre = job_->stream_preamble(); !pre.empty()) write_chunk(std::move(pre));
    do_write();
  }
  watch();
}

void HttpSession::enqueue_event(EngineEvent ev) {
  bool post = false;
  {
    std::lock_guard<std::mutex> lock(events_mu_);
    events_.push_back(std::move(ev));
    post = !std::exchange(drain_posted_, true);
  }
  if (post) asio::post(stream_.get_executor(), [self = shared_from_this()] { self->drain_events(); });
}

void HttpSession::drain_events() {
  std::vector<EngineEvent> events;
  {
    std::lock_guard<std::mutex> lock(events_mu_);
    events.swap(events_);
    drain_posted_ = false;
  }
  for (EngineEvent& ev : events) on_engine_event(ev);
  do_write();
}

void HttpSession::on_engine_event(EngineEvent& ev) {
  if (!job_) return;
  const bool live = job_->streaming() && !submit_error_ && !closed_;
  if (!ev.finished) {
    if (!ev.prompt_scores.empty()) return job_->on_prompt_scores(ev.prompt, std::move(ev.prompt_scores));
    ev.step.logprobs = ev.logprobs ? &*ev.logprobs : nullptr;
    std::string chunk = job_->on_step(ev.prompt, ev.step);
    if (live && !chunk.empty()) write_chunk(std::move(chunk));
    return;
  }
  RequestEvent re;
  re.request_finished = true;
  re.results = &ev.results;
  re.metrics = &ev.metrics;
  re.error = ev.error;
  re.cancelled = ev.cancelled;
  if (ev.cancelled) job_cancelled_ = true;
  if (ev.error.ok() && !ev.cancelled) state_->metrics.observe(ev.metrics);
  std::string chunk = job_->on_finished(ev.prompt, re);
  if (live && !chunk.empty()) write_chunk(std::move(chunk));
  if (--pending_ == 0) on_job_done();
}

void HttpSession::on_job_done() {
  job_->fill_log_record(log_);
  if (closed_) {
    job_.reset();
    return close();
  }
  if (submit_error_) {
    job_.reset();
    return send(error_reply(*submit_error_));
  }
  if (job_->streaming()) {
    if (const auto& err = job_->error()) {
      write_chunk(sse_event(api_error_body(status_error(*err))));
    } else if (state_->cancelled_on_stop.load()) {
      write_chunk(sse_event(api_error_body(ApiError{503, "the server is shutting down", "server_error", {}, {}})));
    }
    write_chunk(job_->stream_epilogue());
    out_ += "0\r\n\r\n";
    stream_ending_ = true;
    handed_status_ = 200;
    do_write();
    return;
  }
  if (const auto& err = job_->error()) {
    auto e = status_error(*err);
    job_.reset();
    return send(error_reply(e));
  }
  if (job_cancelled_ && state_->cancelled_on_stop.load()) {  // cut short by the shutdown (README: 503)
    job_.reset();
    return send(error_reply(ApiError{503, "the server is shutting down", "server_error", {}, {}}));
  }
  Reply r{200, dump_json(job_->response()), "application/json", {}};
  job_.reset();
  send(std::move(r));
}

void HttpSession::write_chunk(std::string data) {
  if (data.empty()) return;
  out_ += fmt::format("{:x}\r\n", data.size());
  out_ += data;
  out_ += "\r\n";
}

void HttpSession::do_write() {
  if (writing_ || closed_) return;
  if (out_.empty()) {
    if (stream_ending_) {
      stream_ending_ = false;
      job_.reset();
      end_log(200);
      response_complete();
    }
    return;
  }
  writing_ = true;
  sending_.swap(out_);
  out_.clear();
  asio::async_write(stream_, asio::buffer(sending_), [self = shared_from_this()](beast::error_code ec, size_t) {
    self->writing_ = false;
    if (ec) {
      self->write_failed_ = true;
      return self->client_gone();
    }
    self->do_write();
  });
}

void HttpSession::watch() {
  if (watching_ || closed_) return;
  watching_ = true;
  stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, size_t n) {
    self->watching_ = false;
    if (!ec) self->buffer_.commit(n);
    if (self->resume_after_watch_) {
      self->resume_after_watch_ = false;
      return self->do_read();
    }
    if (ec) return self->client_gone();
    if (self->job_) self->watch();
  });
}

void HttpSession::response_complete() {
  if (!keep_alive_ || state_->stopping.load()) return close();
  if (watching_) {
    resume_after_watch_ = true;
    beast::error_code ec;
    stream_.socket().cancel(ec);
    return;
  }
  do_read();
}

void HttpSession::client_gone() {
  if (closed_) return;
  closed_ = true;
  if (job_ && pending_ > 0) {
    for (uint64_t id : job_ids_) state_->engine->cancel(id);
    return;  // on_job_done() closes the socket once the engine has let go
  }
  close();
}

void HttpSession::close() {
  // 499: a request whose response was not (fully) handed to the client.
  end_log(handed_status_ != 0 && !write_failed_ && (out_.empty() || !stream_ending_) ? handed_status_ : 499);
  closed_ = true;
  beast::error_code ec;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  stream_.socket().close(ec);
}

}  // namespace tessera::server
