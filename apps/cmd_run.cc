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
#include "sample/stop_matcher.h"

namespace tessera::cli {

namespace {

struct RunOptions {
  EngineFlags engine;
  std::string prompt;
  std::string prompt_ids;
  GenerationOptions gen;
  std::vector<std::string> logit_bias;
  bool seed_set = false;
  bool print_ids = false;
};

Result<std::vector<int32_t>> parse_ids(const std::string& text, const char* flag) {
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
      return invalid_argument(std::string(flag) + ": '" + item + "' is not a token id");
    }
  }
  if (ids.empty()) return invalid_argument(std::string(flag) + " is empty");
  return ids;
}

// "ID=BIAS" -> (id, bias).
Result<std::pair<int32_t, float>> parse_bias(const std::string& text) {
  const size_t eq = text.find('=');
  try {
    if (eq == std::string::npos) throw std::invalid_argument(text);
    size_t used_id = 0, used_bias = 0;
    const long id = std::stol(text.substr(0, eq), &used_id);
    const float bias = std::stof(text.substr(eq + 1), &used_bias);
    if (used_id != eq || used_bias != text.size() - eq - 1 || id < 0 || id > INT32_MAX) throw std::invalid_argument(text);
    return std::make_pair(static_cast<int32_t>(id), bias);
  } catch (...) {
    return invalid_argument("--logit-bias: '" + text + "' is not ID=BIAS");
  }
}

std::string format_logprobs(const TokenLogprobs& lp, const Model& m) {
  auto name = [&](int32_t id) { return m.has_tokenizer() ? m.tokenizer().token_text(id) : std::to_string(id); };
  std::string s = fmt::format("{:>6} {:<16} {:8.4f} |", lp.token, name(lp.token), lp.logprob);
  for (const auto& [id, v] : lp.top) s += fmt::format(" {}:{:.3f}", name(id), v);
  return s;
}

int run_main(RunOptions o) {
  auto kv_bytes = kv_memory_bytes(o.engine);
  if (!kv_bytes.ok()) return fail(kv_bytes.status());
  for (const auto& b : o.logit_bias) {
    auto parsed = parse_bias(b);
    if (!parsed.ok()) return fail(parsed.status());
    o.gen.sampling.logit_bias.push_back(*parsed);
  }
  auto model = Model::load(o.engine.model, load_options(o.engine));
  if (!model.ok()) return fail(model.status());
  const Model& m = **model;
  std::vector<int32_t> prompt;
  if (!o.prompt_ids.empty()) {
    auto ids = parse_ids(o.prompt_ids, "--prompt-ids");
    if (!ids.ok()) return fail(ids.status());
    for (int32_t id : *ids) {
      if (id >= m.config().n_vocab) {
        return fail(invalid_argument("--prompt-ids: token " + std::to_string(id) + " is outside the vocabulary (" +
                                     std::to_string(m.config().n_vocab) + " tokens)"));
      }
    }
    prompt = *ids;
  } else if (!m.has_tokenizer()) {
    return fail(invalid_argument(o.engine.model + " has no tokenizer (no tokenizer.json / tokenizer.ggml.model); use --prompt-ids"));
  } else {
    prompt = m.tokenizer().encode(o.prompt, /*add_special=*/true);
  }
  if (Status st = o.gen.validate(m.config().n_vocab); !st.ok()) return fail(st);
  const bool print_ids = o.print_ids || !m.has_tokenizer();
  const int threads = resolve_threads(o.engine);
  ThreadPool pool(threads);
  const cpu::Kernels& kernels = cpu::kernels();
  const int64_t ctx = o.engine.ctx_size > 0 ? o.engine.ctx_size : std::min(m.config().context_length, 4096);
  auto gen = Generator::create(m, pool, kernels, *kv_bytes, ctx, kv_dtype(o.engine));
  if (!gen.ok()) return fail(gen.status());
  const KvCacheSpec& spec = (*gen)->kv_spec();
  if (static_cast<int64_t>(prompt.size()) >= (*gen)->context_tokens()) {
    return fail(out_of_range("the prompt has " + std::to_string(prompt.size()) + " tokens but the context holds " +
                             std::to_string((*gen)->context_tokens()) + " (raise --ctx-size or --kv-cache-memory)"));
  }
  if (!o.seed_set) o.gen.sampling.seed = std::random_device{}() | (uint64_t{std::random_device{}()} << 32);
  fmt::print(stderr, "tessera: {} ({} layers, {} threads, {} kernels); KV cache: {} tokens, {}, {} bytes/token; seed {}\n",
             o.engine.model, m.config().n_layers, threads, isa_name(kernels.isa), spec.capacity_tokens(),
             format_byte_size(spec.total_bytes()), spec.bytes_per_token(), o.gen.sampling.seed);
  // One choice streams live; with n > 1 every choice is printed at the end.
  const bool stream = o.gen.n == 1 && !print_ids;
  auto result = (*gen)->generate(prompt, o.gen, [&](const StreamEvent& ev) {
    if (stream) {
      std::fwrite(ev.text.data(), 1, ev.text.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  });
  if (!result.ok()) return fail(result.status());
  for (size_t i = 0; i < result->choices.size(); ++i) {
    const ChoiceResult& c = result->choices[i];
    if (o.gen.n > 1) fmt::print("--- choice {} (finish: {})\n", i, finish_reason_name(c.finish));
    if (print_ids) {
      std::string line;
      for (size_t t = 0; t < c.tokens.size(); ++t) line += (t ? "," : "") + std::to_string(c.tokens[t]);
      fmt::print("{}\n", line);
    } else {
      fmt::print("{}\n", stream ? "" : c.text);
    }
    if (o.gen.logprobs >= 0) {
      for (const auto& lp : c.logprobs) fmt::print(stderr, "{}\n", format_logprobs(lp, m));
    }
  }
  std::fflush(stdout);
  const GenerationStats& s = result->stats;
  const double tpot = s.decode_steps > 0 ? s.decode_ms / s.decode_steps : 0;
  std::string finishes;
  for (const auto& c : result->choices) finishes += std::string(finishes.empty() ? "" : ",") + finish_reason_name(c.finish);
  fmt::print(stderr,
             "\nprompt tokens: {}, generated tokens: {} (finish: {})\n"
             "TTFT: {:.2f} ms, prefill: {:.1f} tokens/s, decode: {:.1f} steps/s (TPOT {:.2f} ms)\n"
             "KV cache: {} for {} tokens\n",
             s.prompt_tokens, s.generated_tokens, finishes, s.ttft_ms,
             s.prefill_ms > 0 ? s.prompt_tokens * 1000.0 / s.prefill_ms : 0.0, tpot > 0 ? 1000.0 / tpot : 0.0, tpot,
             format_byte_size(spec.total_bytes()), spec.capacity_tokens());
  return 0;
}

}  // namespace

Runner register_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  SamplingParams& sp = o->gen.sampling;
  CLI::App* sub = app.add_subcommand("run", "Generate text from a prompt (streams to stdout, summary to stderr)");
  add_engine_flags(*sub, o->engine);
  auto* p = sub->add_option("-p,--prompt", o->prompt, "Prompt text (BOS added as the vocabulary says)");
  auto* ids = sub->add_option("--prompt-ids", o->prompt_ids, "Prompt as comma-separated token ids (no BOS added)");
  p->excludes(ids);
  sub->add_option("-n,--n-predict", o->gen.max_tokens, "Tokens to generate per choice (-1: until a stop condition)")
      ->check(CLI::Range(-1, 1 << 30));
  sub->add_option("--temp", sp.temperature, "Temperature (0 = greedy)")->check(CLI::Range(0.0f, 100.0f));
  sub->add_option("--top-k", sp.top_k, "Top-k (0 disables)")->check(CLI::Range(-1, 1 << 30));
  sub->add_option("--top-p", sp.top_p, "Top-p / nucleus, in (0, 1] (1 disables)")->check(CLI::Range(0.0f, 1.0f));
  sub->add_option("--min-p", sp.min_p, "Min-p (0 disables)")->check(CLI::Range(0.0f, 1.0f));
  sub->add_option("--typical-p", sp.typical_p, "Locally typical sampling mass, in (0, 1] (1 disables)")
      ->check(CLI::Range(0.0f, 1.0f));
  sub->add_option("--repetition-penalty", sp.repetition_penalty, "Repetition penalty over prompt and output (1 disables)")
      ->check(CLI::Range(0.0f, 100.0f));
  sub->add_option("--presence-penalty", sp.presence_penalty, "Presence penalty over output tokens, in [-2, 2]")
      ->check(CLI::Range(-2.0f, 2.0f));
  sub->add_option("--frequency-penalty", sp.frequency_penalty, "Frequency penalty over output tokens, in [-2, 2]")
      ->check(CLI::Range(-2.0f, 2.0f));
  sub->add_option("--logit-bias", o->logit_bias, "ID=BIAS added to a token's logit (repeatable)");
  sub->add_option("--seed", sp.seed, "Random seed (default: random, printed)")->each([o](const std::string&) {
    o->seed_set = true;
  });
  sub->add_option("--min-tokens", o->gen.min_tokens, "Suppress EOS and stop strings until this many tokens")
      ->check(CLI::Range(0, 1 << 30));
  sub->add_flag("--ignore-eos", o->gen.ignore_eos, "Keep generating past EOS");
  sub->add_option("--stop", o->gen.stop, "Stop string (repeatable, up to 16); the output ends before it");
  sub->add_option("--stop-token-id", o->gen.stop_token_ids, "Token id that ends generation (repeatable)");
  sub->add_option("--n", o->gen.n, "Completions of the prompt (they share its KV blocks)")->check(CLI::Range(1, 128));
  sub->add_option("--logprobs", o->gen.logprobs, "Print each token's logprob and this many alternatives to stderr")
      ->check(CLI::Range(0, 20));
  sub->add_flag("--print-ids", o->print_ids, "Print generated token ids (comma-separated) instead of text");
  return [o, p, ids] {
    if (p->count() == 0 && ids->count() == 0) {
      fmt::print(stderr, "tessera: error: run needs --prompt or --prompt-ids (see --help)\n");
      return kExitUsage;
    }
    if (o->gen.sampling.top_p <= 0.0f || o->gen.sampling.typical_p <= 0.0f) {
      fmt::print(stderr, "tessera: error: --top-p and --typical-p must be in (0, 1] (see --help)\n");
      return kExitUsage;
    }
    if (o->gen.stop.size() > kMaxStopStrings) {
      fmt::print(stderr, "tessera: error: at most {} --stop strings (see --help)\n", kMaxStopStrings);
      return kExitUsage;
    }
    return run_main(*o);
  };
}

}  // namespace tessera::cli
