// `tessera bench-serving`: the engine under load — aggregate decode tokens/s
// for several numbers of concurrent sequences, and the TTFT of a request whose
// long prefix is in the prefix cache against the same request cold.
#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "cli_common.h"

namespace tessera::cli {

namespace {

struct ServingBenchOptions {
  EngineFlags engine;
  SchedulerFlags sched;
  std::string concurrency = "1,4,16,64";
  int decode_tokens = 32;
  int prompt_tokens = 16;
  int prefix_tokens = 1000;
};

std::vector<int32_t> synthetic_prompt(int n, int seed, int n_vocab) {
  std::vector<int32_t> p(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    p[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919 + seed * 104729 + 3) % n_vocab);
  return p;
}

// Runs `n` requests together on `engine`; returns what the engine measured
// for them (the difference of its metrics before and after).
Result<EngineMetrics> run_batch(Engine& engine, const ServingBenchOptions& o, int n) {
  GenerationOptions opts;
  opts.max_tokens = o.decode_tokens;
  opts.ignore_eos = true;
  opts.sampling.temperature = 0;
  const EngineMetrics before = engine.metrics();
  for (int i = 0; i < n; ++i) {
    TESSERA_RETURN_IF_ERROR(
        engine.submit(synthetic_prompt(o.prompt_tokens, i, engine.model_info().n_vocab), opts, nullptr).status());
  }
  engine.run_until_idle();
  EngineMetrics m = engine.metrics();
  m.decode_ms -= before.decode_ms;
  m.decode_tokens -= before.decode_tokens;
  m.preemptions -= before.preemptions;
  return m;
}

// TTFT of one request after `engine` has seen (or not) its prefix.
Result<double> ttft(Engine& engine, const std::vector<int32_t>& prompt) {
  GenerationOptions opts;
  opts.max_tokens = 1;
  opts.sampling.temperature = 0;
  TESSERA_ASSIGN_OR_RETURN(RequestOutcome out, engine.generate(prompt, opts));
  return out.metrics.ttft_ms;
}

int bench_serving_main(const ServingBenchOptions& o) {
  std::vector<int> levels;
  std::stringstream ss(o.concurrency);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // A bad value is a usage error (exit 2), as CLI11's own checks are.
    try {
      size_t used = 0;
      levels.push_back(std::stoi(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (...) {
      fmt::print(stderr, "tessera: error: --concurrency: '{}' is not a number (see --help)\n", item);
      return kExitUsage;
    }
    if (levels.back() < 1) {
      fmt::print(stderr, "tessera: error: --concurrency values must be >= 1 (see --help)\n");
      return kExitUsage;
    }
  }
  fmt::print("model: {}, threads: {}, {} prompt + {} generated tokens per sequence\n", o.engine.model,
             resolve_threads(o.engine), o.prompt_tokens, o.decode_tokens);
  {
    // One engine for every level: room for the largest at once (unless the
    // user chose a KV budget), and metrics taken per level.
    const int most = *std::max_element(levels.begin(), levels.end());
    SchedulerFlags sched = o.sched;
    sched.max_num_seqs = std::max(sched.max_num_seqs, most);
    auto made =
        create_engine(o.engine, sched, static_cast<int64_t>(most + 1) * (o.prompt_tokens + o.decode_tokens + 32));
    if (!made.ok()) return fail(made.status());
    Engine& engine = **made;
    double base = 0;
    for (int n : levels) {
      auto metrics = run_batch(engine, o, n);
      if (!metrics.ok()) return fail(metrics.status());
      const double tps =
          metrics->decode_ms > 0 ? static_cast<double>(metrics->decode_tokens) * 1000.0 / metrics->decode_ms : 0;
      if (base == 0) base = tps;
      fmt::print("concurrency {:>4}: decode {:>9.1f} tokens/s aggregate ({:.2f}x of concurrency {}), {} preemptions\n",
                 n, tps, tps / base, levels.front(), metrics->preemptions);
    }
  }
  if (o.prefix_tokens > 0) {
    SchedulerFlags sched = o.sched;
    sched.no_prefix_cache = false;
    auto engine = create_engine(o.engine, sched, o.prefix_tokens + 64);
    if (!engine.ok()) return fail(engine.status());
    const int32_t n_vocab = (*engine)->model_info().n_vocab;
    auto prompt = synthetic_prompt(o.prefix_tokens + 8, 7, n_vocab);
    auto cold = ttft(**engine, prompt);
    prompt.back() = (prompt.back() + 1) % n_vocab;  // same prefix, another question
    auto cached = ttft(**engine, prompt);
    // Name the test: with --kv-cache-memory the cache can be too small for
    // the prefix even though every concurrency level fitted.
    auto prefix_fail = [&](const Status& st) {
      return fail(
          Status(st.code(), "the --prefix-tokens " + std::to_string(o.prefix_tokens) + " TTFT test: " + st.message()));
    };
    if (!cold.ok()) return prefix_fail(cold.status());
    if (!cached.ok()) return prefix_fail(cached.status());
    fmt::print("TTFT with a {}-token prefix: cold {:.1f} ms, prefix cached {:.1f} ms ({:.1f}x faster)\n",
               o.prefix_tokens, *cold, *cached, *cold / *cached);
  }
  return 0;
}

}  // namespace

Runner register_bench_serving(CLI::App& app) {
  auto o = std::make_shared<ServingBenchOptions>();
  CLI::App* sub =
      app.add_subcommand("bench-serving", "Engine throughput by concurrency, and TTFT with a cached prefix");
  add_engine_flags(*sub, o->engine);
  // The cache is sized for the largest concurrency's sequences (-p + -n each).
  sub->get_option("--ctx-size")->description("Ignored: the KV cache holds every sequence's -p + -n");
  sub->get_option("--kv-cache-memory")
      ->description("KV cache memory budget, e.g. 64MiB (default: room for every sequence's -p + -n at once)");
  add_scheduler_flags(*sub, o->sched);
  sub->add_option("--concurrency", o->concurrency, "Comma-separated numbers of concurrent sequences")
      ->capture_default_str();
  sub->add_option("-n,--decode-tokens", o->decode_tokens, "Tokens generated per sequence")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  sub->add_option("-p,--prompt-tokens", o->prompt_tokens, "Prompt tokens per sequence")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  sub->add_option("--prefix-tokens", o->prefix_tokens, "Shared prefix for the TTFT test (0 skips it)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  return [o] { return bench_serving_main(*o); };
}

}  // namespace tessera::cli
