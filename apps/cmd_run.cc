// `tessera run`: generate text from a prompt, streaming it to stdout.
#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <random>
#include <sstream>

#include "backend/cpu/kernels.h"
#include "cli_common.h"
#include "core/byte_size.h"
#include "engine/generator.h"
#include "tokenizer/incremental_detokenizer.h"

namespace tessera::cli {

namespace {

struct RunOptions {
  EngineFlags engine;
  std::string prompt;
  std::string prompt_ids;
  int32_t n_predict = 128;
  SamplingParams sampling;
  bool seed_set = false;
  bool print_ids = false;
};

Result<std::vector<int32_t>> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const long v = std::stol(item, &used);
      if (used != item.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(item);
      ids.push_back(static_cast<int32_t>(v));
    } catch (...) {
      return invalid_argument("--prompt-ids: '" + item + "' is not a token id");
    }
  }
  if (ids.empty()) return invalid_argument("--prompt-ids is empty");
  return ids;
}

int run_main(const RunOptions& o) {
  auto kv_bytes = kv_memory_bytes(o.engine);
  if (!kv_bytes.ok()) return fail(kv_bytes.status());
  auto model = Model::load(o.engine.model);
  if (!model.ok()) return fail(model.status());
  const Model& m = **model;
  std::vector<int32_t> prompt;
  if (!o.prompt_ids.empty()) {
    auto ids = parse_ids(o.prompt_ids);
    if (!ids.ok()) return fail(ids.status());
    for (int32_t id : *ids) {
      if (id >= m.config().n_vocab) {
        return fail(invalid_argument("--prompt-ids: token " + std::to_string(id) + " is outside the vocabulary (" +
                                     std::to_string(m.config().n_vocab) + " tokens)"));
      }
    }
    prompt = *ids;
  } else {
    prompt = m.tokenizer().encode(o.prompt, /*add_special=*/true);
  }
  const int threads = resolve_threads(o.engine);
  ThreadPool pool(threads);
  const cpu::Kernels& kernels = cpu::kernels();
  const int64_t ctx = o.engine.ctx_size > 0 ? o.engine.ctx_size : std::min(m.config().context_length, 4096);
  auto gen = Generator::create(m, pool, kernels, *kv_bytes, ctx);
  if (!gen.ok()) return fail(gen.status());
  const KvCacheSpec& spec = (*gen)->kv_spec();
  fmt::print(stderr, "tessera: {} ({} layers, {} threads, {} kernels); KV cache: {} tokens, {}, {} bytes/token\n",
             o.engine.model, m.config().n_layers, threads, isa_name(kernels.isa), spec.capacity_tokens(),
             format_byte_size(spec.total_bytes()), spec.bytes_per_token());
  GenerationOptions opts;
  opts.max_tokens = o.n_predict;
  opts.sampling = o.sampling;
  if (!o.seed_set) opts.sampling.seed = std::random_device{}();
  IncrementalDetokenizer detok(m.tokenizer());
  std::vector<int32_t> out_ids;
  auto stats = (*gen)->generate(prompt, opts, [&](int32_t id) {
    if (o.print_ids) {
      out_ids.push_back(id);
    } else {
      const std::string piece = detok.push(id);
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  });
  if (!stats.ok()) return fail(stats.status());
  if (o.print_ids) {
    std::string line;
    for (size_t i = 0; i < out_ids.size(); ++i) line += (i ? "," : "") + std::to_string(out_ids[i]);
    fmt::print("{}\n", line);
  } else {
    const std::string rest = detok.flush();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
    std::fputc('\n', stdout);
  }
  std::fflush(stdout);
  const GenerationStats& s = *stats;
  const int decode_steps = std::max(0, s.generated_tokens - 1);
  const double tpot = decode_steps > 0 ? s.decode_ms / decode_steps : 0;
  fmt::print(stderr,
             "\nprompt tokens: {}, generated tokens: {} (finish: {})\n"
             "TTFT: {:.2f} ms, prefill: {:.1f} tokens/s, decode: {:.1f} tokens/s (TPOT {:.2f} ms)\n"
             "KV cache: {} for {} tokens\n",
             s.prompt_tokens, s.generated_tokens, s.finish == FinishReason::kStop ? "stop" : "length", s.ttft_ms,
             s.prefill_ms > 0 ? s.prompt_tokens * 1000.0 / s.prefill_ms : 0.0, tpot > 0 ? 1000.0 / tpot : 0.0, tpot,
             format_byte_size(spec.total_bytes()), spec.capacity_tokens());
  return 0;
}

}  // namespace

Runner register_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand("run", "Generate text from a prompt (streams to stdout, summary to stderr)");
  add_engine_flags(*sub, o->engine);
  auto* p = sub->add_option("-p,--prompt", o->prompt, "Prompt text (BOS added as the vocabulary says)");
  auto* ids = sub->add_option("--prompt-ids", o->prompt_ids, "Prompt as comma-separated token ids (no BOS added)");
  p->excludes(ids);
  sub->add_option("-n,--n-predict", o->n_predict, "Tokens to generate (-1: until EOS or the context is full)")
      ->check(CLI::Range(-1, 1 << 30));
  sub->add_option("--temp", o->sampling.temperature, "Temperature (0 = greedy)")->check(CLI::Range(0.0f, 100.0f));
  sub->add_option("--top-k", o->sampling.top_k, "Top-k (0 disables)")->check(CLI::Range(0, 1 << 30));
  sub->add_option("--top-p", o->sampling.top_p, "Top-p / nucleus (1 disables)")->check(CLI::Range(0.0f, 1.0f));
  sub->add_option("--min-p", o->sampling.min_p, "Min-p (0 disables)")->check(CLI::Range(0.0f, 1.0f));
  sub->add_option("--seed", o->sampling.seed, "Random seed (default: random)")->each([o](const std::string&) { o->seed_set = true; });
  sub->add_flag("--print-ids", o->print_ids, "Print generated token ids (comma-separated) instead of text");
  return [o, p, ids] {
    if (p->count() == 0 && ids->count() == 0) {
      fmt::print(stderr, "tessera: error: run needs --prompt or --prompt-ids (see --help)\n");
      return kExitUsage;
    }
    if (o->sampling.top_p <= 0.0f) {
      fmt::print(stderr, "tessera: error: --top-p must be in (0, 1] (see --help)\n");
      return kExitUsage;
    }
    return run_main(*o);
  };
}

}  // namespace tessera::cli
