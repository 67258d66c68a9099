#include "server/http_server.h"

#include <boost/asio.hpp>
#include <filesystem>
#include <utility>  // before Boost 1.74 asio, whose awaitable.hpp uses std::exchange without it

#include "server/http_session.h"

namespace tessera::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

struct Server::Impl {
  explicit Impl(int threads) : ioc(threads) {}
  asio::io_context ioc;
  std::optional<tcp::acceptor> acceptor;
  std::shared_ptr<ServerState> state;

  void accept() {
    acceptor->async_accept(asio::make_strand(ioc), [this](boost::system::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
      if (!ec) {
        boost::system::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        std::make_shared<HttpSession>(std::move(socket), state)->run();
      }
      accept();
    });
  }
};

Result<std::unique_ptr<Server>> Server::create(Engine& engine, ServerConfig config) {
  std::unique_ptr<Server> s(new Server());
  s->state_ = std::make_shared<ServerState>();
  ServerState& st = *s->state_;
  st.engine = &engine;
  const ModelInfo& info = engine.model_info();
  const Vocab* vocab = engine.vocab();
  if (config.served_model_name.empty()) {
    config.served_model_name = std::filesystem::path(info.path).filename().string();
  }
  if (config.io_threads < 1) config.io_threads = 1;
  const std::string source = !config.chat_template.empty() ? config.chat_template
                             : vocab != nullptr            ? vocab->chat_template()
                                                           : std::string();
  if (!source.empty() && vocab != nullptr) {
    auto t = ChatFormatter::create(*vocab, source);
    if (!t.ok()) return t.status();  // "chat template: line L, column C: ..."
    st.chat = std::move(*t);
  }
  st.config = std::move(config);
  if (st.config.request_log) {
    st.request_log.emplace(*st.config.request_log,
                           st.config.request_log_file != nullptr ? st.config.request_log_file : stderr);
  }
  st.protocol.vocab = vocab;
  st.protocol.n_vocab = info.n_vocab;
  st.protocol.context_tokens = info.context;
  st.protocol.served_model = st.config.served_model_name;
  st.protocol.chat = st.chat.get();
  st.protocol.defaults = st.config.request_defaults;
  s->impl_ = std::make_unique<Impl>(st.config.io_threads);
  s->impl_->state = s->state_;
  return s;
}

Server::~Server() {
  stop(std::chrono::milliseconds(0));
}

Status Server::start() {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(state_->config.host, ec);
  if (ec) return invalid_argument("--host: '" + state_->config.host + "' is not an IP address");
  const tcp::endpoint endpoint(address, state_->config.port);
  auto& acc = impl_->acceptor.emplace(impl_->ioc);
  acc.open(endpoint.protocol(), ec);
  if (!ec) acc.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(endpoint, ec);
  if (!ec) acc.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(StatusCode::kInvalidArgument, "cannot listen on " + state_->config.host + ":" +
                                                    std::to_string(state_->config.port) + ": " + ec.message());
  }
  port_ = acc.local_endpoint().port();
  impl_->accept();
  for (int i = 0; i < state_->config.io_threads; ++i) threads_.emplace_back([this] { impl_->ioc.run(); });
  return {};
}

void Server::stop_accepting() {
  if (accepting_stopped_) return;
  accepting_stopped_ = true;
  state_->stopping.store(true);
  if (impl_->acceptor) {
    asio::post(impl_->ioc, [this] {
      boost::system::error_code ec;
      impl_->acceptor->close(ec);
    });
  }
}

int32_t Server::drain(std::chrono::milliseconds timeout) {
  if (stopped_ || !impl_) return 0;
  stop_accepting();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (state_->in_flight.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return state_->in_flight.load();
}

void Server::stop(std::chrono::milliseconds grace) {
  // A server whose create() failed (a bad chat template) has no io context yet.
  if (stopped_ || !impl_) return;
  stopped_ = true;
  stop_accepting();
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->active.empty()) state_->cancelled_on_stop.store(true);
    for (uint64_t id : state_->active) state_->engine->cancel(id);
  }
  // The engine finishes cancelled requests within a step; their connections then flush.
  const auto deadline = std::chrono::steady_clock::now() + std::max(grace, std::chrono::milliseconds(2000));
  while (state_->in_flight.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (grace.count() > 0) std::this_thread::sleep_for(std::min(grace, std::chrono::milliseconds(100)));
  impl_->ioc.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace tessera::server
