// `tessera serve`: an OpenAI-compatible HTTP server (src/server/) over the
// continuous-batching engine. SIGINT / SIGTERM stop it cleanly (exit 0).
#include <fmt/core.h>

// clang-format off
#include <utility>  // before Boost 1.74 asio, whose awaitable.hpp uses std::exchange without it
#include <boost/asio.hpp>
// clang-format on
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "cli_common.h"
#include "server/http_server.h"
#include "tessera/byte_size.h"

namespace tessera::cli {

namespace {

struct ServeOptions {
  EngineFlags engine;
  SchedulerFlags sched;
  server::ServerConfig server;
  std::string template_file;
  bool no_webui = false;
  double shutdown_timeout_s = 30;
  std::string log_format = "text";
};

int serve_main(ServeOptions o) {
  auto options = engine_options(o.engine, o.sched);
  if (!options.ok()) return fail(options.status());
  if (!o.template_file.empty()) {
    std::ifstream in(o.template_file, std::ios::binary);
    if (!in) return fail(not_found(o.template_file + ": cannot open chat template"));
    std::ostringstream ss;
    ss << in.rdbuf();
    o.server.chat_template = ss.str();
  }
  auto engine = load_engine(*options);
  if (!engine.ok()) return fail(engine.status());
  o.server.webui = !o.no_webui;
  o.server.request_log = o.log_format == "json" ? server::RequestLogFormat::kJson : server::RequestLogFormat::kText;
  auto srv = server::Server::create(**engine, o.server);
  if (!srv.ok()) return fail(srv.status());
  (*engine)->start();
  if (Status st = (*srv)->start(); !st.ok()) {
    (*engine)->stop();
    return fail(st);
  }
  boost::asio::io_context signals_ioc;
  boost::asio::signal_set signals(signals_ioc, SIGINT, SIGTERM);
  signals.async_wait([](const boost::system::error_code&, int) {});
  const KvCacheInfo& kv = (*engine)->kv_cache_info();
  // Under mpirun, which rank to signal: SIGTERM to mpirun itself ends every
  // rank at once, SIGTERM to rank 0 drains.
  const int world = o.engine.parallel.world_size();
  const std::string rank0 =
      world > 1 ? fmt::format("; rank 0 of {}, pid {}: SIGTERM it to drain", world, static_cast<long>(getpid())) : "";
  fmt::print(stderr,
             "tessera serve: listening on http://{}:{} serving model '{}' ({}; {} {}, KV cache {} tokens, {}{})\n",
             o.server.host, (*srv)->port(), (*srv)->state().protocol.served_model, o.engine.model,
             options->backend.threads, options->backend.threads == 1 ? "thread" : "threads", kv.capacity_tokens,
             format_byte_size(kv.total_bytes), rank0);
  if (o.server.webui) {
    fmt::print(stderr, "tessera serve: chat web UI at http://{}:{}/\n", o.server.host, (*srv)->port());
  }
  warn_past_trained_context((*engine)->model_info());
  signals_ioc.run();  // until SIGINT / SIGTERM
  // Drain: no new connections or requests; running ones finish within
  // --shutdown-timeout, then the rest are cancelled (streams get an error event).
  const int32_t running = (*srv)->state().in_flight.load();
  fmt::print(stderr, "tessera serve: shutting down ({} requests running; waiting up to {} s)\n", running,
             o.shutdown_timeout_s);
  const int32_t left = (*srv)->drain(std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_timeout_s * 1000)));
  if (left > 0) fmt::print(stderr, "tessera serve: cancelling {} requests still running\n", left);
  (*srv)->stop(std::chrono::milliseconds(5000));
  (*engine)->stop();
  srv->reset();
  return 0;
}

}  // namespace

Runner register_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* sub = app.add_subcommand("serve", "Serve the model over an OpenAI-compatible HTTP API");
  add_engine_flags(*sub, o->engine);
  sub->add_option("--chat-template", o->template_file, "Jinja chat template file (overrides the model's)")
      ->group(kGroupModel);
  add_scheduler_flags(*sub, o->sched);
  sub->add_option("--host", o->server.host, "Address to listen on")->capture_default_str()->group(kGroupServer);
  sub->add_option("--port", o->server.port, "TCP port (0: any free port)")->capture_default_str()->group(kGroupServer);
  sub->add_option("--served-model-name", o->server.served_model_name, "Model name clients use (default: the file name)")
      ->group(kGroupServer);
  sub->add_option("--api-key", o->server.api_key, "Require 'Authorization: Bearer KEY' on /v1 endpoints")
      ->group(kGroupServer);
  sub->add_option("--max-queue", o->server.max_queue, "Requests admitted at once (running + waiting); beyond: 429")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str()
      ->group(kGroupServer);
  sub->add_option("--max-body-bytes", o->server.max_body_bytes, "Largest request body; beyond: 413")
      ->check(CLI::Range(uint64_t{64}, uint64_t{1} << 32))
      ->capture_default_str()
      ->group(kGroupServer);
  sub->add_flag("--no-webui", o->no_webui, "Do not serve the chat web UI at GET / (then / is 404)")
      ->group(kGroupServer);
  sub->add_option("--log-format", o->log_format,
                  "The request log on stderr, one line per finished request: text or json (one object per line)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str()
      ->group(kGroupServer);
  sub->add_option("--header-timeout", o->server.header_timeout_s,
                  "Seconds a client has to send a request's whole header; slower connections are closed")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str()
      ->group(kGroupServer);
  sub->add_option("--idle-timeout", o->server.idle_timeout_s,
                  "Seconds a kept-alive connection may stay silent between requests before it is closed")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str()
      ->group(kGroupServer);
  sub->add_option("--shutdown-timeout", o->shutdown_timeout_s,
                  "On SIGTERM/SIGINT, seconds running requests may take to finish before they are cancelled")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str()
      ->group(kGroupServer);
  // Defaults of request fields (a request's own value wins); OpenAI's unless set.
  server::RequestDefaults& d = o->server.request_defaults;
  sub->add_option("--temp", d.temperature, "Temperature of a request that sets none (0 = greedy)")
      ->check(CLI::Range(0.0f, 100.0f))
      ->capture_default_str()
      ->group(kGroupSampling);
  sub->add_option("--top-p", d.top_p, "Top-p of a request that sets none (0 = greedy, 1 disables)")
      ->check(CLI::Range(0.0f, 1.0f))
      ->capture_default_str()
      ->group(kGroupSampling);
  sub->add_option("--top-k", d.top_k, "Top-k of a request that sets none (0 disables)")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str()
      ->group(kGroupSampling);
  sub->add_option("--min-p", d.min_p, "Min-p of a request that sets none (0 disables)")
      ->check(CLI::Range(0.0f, 1.0f))
      ->capture_default_str()
      ->group(kGroupSampling);
  sub->add_option("--repetition-penalty", d.repetition_penalty,
                  "Repetition penalty of a request that sets none (1 disables)")
      ->check(CLI::Range(0.01f, 100.0f))
      ->capture_default_str()
      ->group(kGroupSampling);
  sub->add_option("-n,--max-tokens", d.max_tokens,
                  "max_tokens of a request that sets none (-1: until the context is full; "
                  "default: 16 for completions, -1 for chat, as OpenAI)")
      ->check(CLI::Range(-1, 1 << 30))
      ->group(kGroupSampling);
  add_spec_flags(*sub, o->sched.spec);
  return [o] {
    if (int rc = check_spec_flags(o->sched.spec); rc != 0) return rc;
    return serve_main(*o);
  };
}

}  // namespace tessera::cli
