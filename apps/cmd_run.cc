// `tessera run`: generate text from a prompt, streaming it to stdout.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "chat_template_source.h"
#include "cli_common.h"
#include "tessera/byte_size.h"
#include "tessera/chat.h"

namespace tessera::cli {

namespace {

struct RunOptions {
  EngineFlags engine;
  SchedulerFlags sched;
  std::vector<std::string> prompts;
  std::string prompt_file;
  std::string prompt_ids;
  bool json = false;
  GenerationOptions gen;
  std::vector<std::string> logit_bias;
  bool seed_set = false;
  bool n_set = false;  // -n given: a prompt it does not fit is refused, not shortened
  bool print_ids = false;
  bool chat = false;          // each prompt is a user message rendered with the chat template
  std::string chat_template;  // --chat-template FILE (implies chat)
  std::string system;         // --system TEXT (chat)
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
    if (used_id != eq || used_bias != text.size() - eq - 1 || id < 0 || id > INT32_MAX)
      throw std::invalid_argument(text);
    return std::make_pair(static_cast<int32_t>(id), bias);
  } catch (...) {
    return invalid_argument("--logit-bias: '" + text + "' is not ID=BIAS");
  }
}

std::string format_logprobs(const TokenLogprobs& lp, const Vocab* vocab) {
  auto name = [&](int32_t id) { return vocab != nullptr ? vocab->token_text(id) : std::to_string(id); };
  std::string s = fmt::format("{:>6} {:<16} {:8.4f} |", lp.token, name(lp.token), lp.logprob);
  for (const auto& [id, v] : lp.top) s += fmt::format(" {}:{:.3f}", name(id), v);
  return s;
}

Result<std::vector<std::string>> read_prompt_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found(path + ": cannot open prompt file");
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(line);
  }
  if (out.empty()) return invalid_argument(path + ": no prompts (one per line)");
  return out;
}

// What one prompt produced.
struct Outcome {
  std::vector<ChoiceResult> choices;
  RequestMetrics metrics;
  Status error;
};

nlohmann::json outcome_json(size_t index, const std::string& prompt, const Outcome& r) {
  nlohmann::json j = {{"index", index}, {"prompt", prompt}};
  if (!r.error.ok()) {
    j["error"] = r.error.message();
    return j;
  }
  const ChoiceResult& c = r.choices[0];
  j["text"] = c.text;
  j["token_ids"] = c.tokens;
  j["finish_reason"] = finish_reason_name(c.finish);
  if (r.choices.size() > 1) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& ch : r.choices)
      all.push_back({{"text", ch.text}, {"token_ids", ch.tokens}, {"finish_reason", finish_reason_name(ch.finish)}});
    j["choices"] = all;
  }
  const RequestMetrics& m = r.metrics;
  j["metrics"] = {{"queue_ms", m.queue_ms},
                  {"ttft_ms", m.ttft_ms},
                  {"tpot_ms", m.tpot_ms()},
                  {"e2e_ms", m.e2e_ms},
                  {"prompt_tokens", m.prompt_tokens},
                  {"cached_tokens", m.cached_tokens},
                  {"generated_tokens", m.generated_tokens},
                  {"preemptions", m.preemptions},
                  {"spec_proposed_tokens", m.spec_proposed_tokens},
                  {"spec_accepted_tokens", m.spec_accepted_tokens},
                  {"spec_acceptance_rate", m.spec_acceptance_rate()},
                  {"spec_mean_accepted_length", m.spec_mean_accepted_length()}};
  return j;
}

int run_main(RunOptions o) {
  for (const auto& b : o.logit_bias) {
    auto parsed = parse_bias(b);
    if (!parsed.ok()) return fail(parsed.status());
    o.gen.sampling.logit_bias.push_back(*parsed);
  }
  if (!o.prompt_file.empty()) {
    auto lines = read_prompt_file(o.prompt_file);
    if (!lines.ok()) return fail(lines.status());
    o.prompts.insert(o.prompts.end(), lines->begin(), lines->end());
  }
  auto options = engine_options(o.engine, o.sched);
  if (!options.ok()) return fail(options.status());
  auto engine = load_engine(*options);
  if (!engine.ok()) return fail(engine.status());
  const ModelInfo& info = (*engine)->model_info();
  const Vocab* vocab = (*engine)->vocab();
  std::vector<std::vector<int32_t>> prompts;
  if (!o.prompt_ids.empty()) {
    auto ids = parse_ids(o.prompt_ids, "--prompt-ids");
    if (!ids.ok()) return fail(ids.status());
    for (int32_t id : *ids) {
      if (id >= info.n_vocab) {
        return fail(invalid_argument("--prompt-ids: token " + std::to_string(id) + " is outside the vocabulary (" +
                                     std::to_string(info.n_vocab) + " tokens)"));
      }
    }
    prompts.push_back(*ids);
    o.prompts = {o.prompt_ids};
  } else if (vocab == nullptr) {
    return fail(invalid_argument(o.engine.model +
                                 " has no tokenizer (no tokenizer.json / tokenizer.ggml.model); use --prompt-ids"));
  } else if (o.chat || !o.chat_template.empty()) {
    // As `tessera chat` and the server: the prompt text never becomes control tokens.
    auto source = chat_template_source(o.chat_template, o.engine.model, *vocab);
    if (!source.ok()) return fail(source.status());
    auto formatter = ChatFormatter::create(*vocab, *source);
    if (!formatter.ok()) return fail(formatter.status());
    for (const auto& p : o.prompts) {
      nlohmann::ordered_json messages = nlohmann::ordered_json::array();
      if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
      messages.push_back({{"role", "user"}, {"content", p}});
      // Command-line text may hold invalid UTF-8: it becomes U+FFFD in the JSON text.
      auto rendered = (*formatter)->render(messages.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      if (!rendered.ok()) return fail(rendered.status());
      prompts.push_back(std::move(rendered->tokens));
    }
  } else {
    for (const auto& p : o.prompts) prompts.push_back(vocab->encode(p, /*add_special=*/true));
  }
  if (Status st = o.gen.validate(info.n_vocab); !st.ok()) return fail(st);
  const bool print_ids = o.print_ids || vocab == nullptr;
  const KvCacheInfo& kv = (*engine)->kv_cache_info();
  if (!o.seed_set) o.gen.sampling.seed = std::random_device{}() | (uint64_t{std::random_device{}()} << 32);
  // A single prompt with one choice streams live; otherwise results print in input order.
  const bool stream = prompts.size() == 1 && o.gen.n == 1 && !print_ids && !o.json;
  std::vector<Outcome> outcomes(prompts.size());
  std::map<uint64_t, size_t> index;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < prompts.size(); ++i) {
    // The engine makes the same check in its API's terms (max_tokens).
    const auto n_prompt = static_cast<int64_t>(prompts[i].size());
    const int64_t ctx = info.context;  // --kv-cache-memory's capacity when given
    GenerationOptions gen = o.gen;
    // The default -n shortens to what fits after the prompt, as a server
    // request's default max_tokens does; an explicit -n is the user's and is
    // refused when it does not fit.
    if (!o.n_set && gen.max_tokens >= 0 && n_prompt < ctx) {
      gen.max_tokens = static_cast<int32_t>(std::min<int64_t>(gen.max_tokens, ctx - n_prompt));
    }
    if (gen.max_tokens >= 0 && n_prompt < ctx && n_prompt + gen.max_tokens > ctx) {
      const Status st = out_of_range("the prompt (" + std::to_string(n_prompt) + " tokens) plus -n " +
                                     std::to_string(o.gen.max_tokens) + " exceeds the context length " +
                                     std::to_string(ctx) + " (lower -n or raise --ctx-size or --kv-cache-memory)");
      if (prompts.size() == 1) return fail(st);
      outcomes[i].error = st;
      continue;
    }
    auto id = (*engine)->submit(prompts[i], gen, [&, i](const RequestEvent& ev) {
      if (stream && !ev.step.text.empty()) {
        std::fwrite(ev.step.text.data(), 1, ev.step.text.size(), stdout);
        std::fflush(stdout);
      }
      if (ev.request_finished) {
        outcomes[i].error = ev.error;
        if (ev.results) outcomes[i].choices = *ev.results;
        if (ev.metrics) outcomes[i].metrics = *ev.metrics;
      }
    });
    if (!id.ok()) {
      if (prompts.size() == 1) return fail(id.status());
      outcomes[i].error = id.status();
    }
  }
  // The seed matters only when sampling: --temp 0 picks the argmax.
  const std::string sampling =
      o.gen.sampling.temperature > 0.0f ? "seed " + std::to_string(o.gen.sampling.seed) : std::string("greedy");
  warn_past_trained_context(info);
  // The context (prompt + generated tokens per sequence) and the cache's
  // capacity, which is whole KV blocks and so can be larger.
  fmt::print(stderr,
             "tessera: {} ({} layers, {}); context {} tokens; KV cache: {} tokens of {}, {}, {} bytes/token; {}\n",
             o.engine.model, info.n_layers, (*engine)->backend_description(), info.context, kv.capacity_tokens,
             kv.dtype, format_byte_size(kv.total_bytes), kv.bytes_per_token, sampling);
  (*engine)->run_until_idle();
  const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  int exit_code = 0;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const Outcome& r = outcomes[i];
    if (o.json) {
      fmt::print("{}\n", outcome_json(i, o.prompts[i], r).dump());
      continue;
    }
    if (!r.error.ok()) {
      fmt::print(stderr, "tessera: error: prompt {}: {}\n", i, r.error.message());
      exit_code = 1;
      continue;
    }
    if (prompts.size() > 1) fmt::print("=== prompt {}: {}\n", i, o.prompts[i]);
    for (size_t c = 0; c < r.choices.size(); ++c) {
      const ChoiceResult& ch = r.choices[c];
      if (r.choices.size() > 1) fmt::print("--- choice {} (finish: {})\n", c, finish_reason_name(ch.finish));
      if (print_ids) {
        std::string line;
        for (size_t t = 0; t < ch.tokens.size(); ++t) line += (t ? "," : "") + std::to_string(ch.tokens[t]);
        fmt::print("{}\n", line);
      } else {
        fmt::print("{}\n", stream ? "" : ch.text);
      }
      if (o.gen.logprobs >= 0) {
        for (const auto& lp : ch.logprobs) fmt::print(stderr, "{}\n", format_logprobs(lp, vocab));
      }
    }
  }
  std::fflush(stdout);
  const EngineMetrics em = (*engine)->metrics();
  std::string finishes;
  for (const auto& r : outcomes) {
    for (const auto& c : r.choices) finishes += std::string(finishes.empty() ? "" : ",") + finish_reason_name(c.finish);
  }
  if (prompts.size() == 1 && outcomes[0].error.ok()) {
    const RequestMetrics& rm = outcomes[0].metrics;
    fmt::print(stderr,
               "\nprompt tokens: {} ({} cached), generated tokens: {} (finish: {})\n"
               "TTFT: {:.2f} ms, prefill: {:.1f} tokens/s, decode: {:.1f} tokens/s (TPOT {:.2f} ms)\n"
               "KV cache: {} for {} tokens\n",
               rm.prompt_tokens, rm.cached_tokens, rm.generated_tokens, finishes, rm.ttft_ms,
               em.prefill_ms > 0 ? static_cast<double>(em.prompt_tokens_computed) * 1000.0 / em.prefill_ms : 0.0,
               rm.tpot_ms() > 0 ? 1000.0 / rm.tpot_ms() : 0.0, rm.tpot_ms(), format_byte_size(kv.total_bytes),
               kv.capacity_tokens);
  } else {
    fmt::print(
        stderr,
        "\n{} prompts: {} generated tokens in {:.1f} ms ({:.1f} tokens/s aggregate); prefix cache hits {}/{} tokens; "
        "preemptions {}\n",
        prompts.size(), em.generated_tokens, wall_ms, static_cast<double>(em.generated_tokens) * 1000.0 / wall_ms,
        em.prefix_hit_tokens, em.prefix_query_tokens, em.preemptions);
  }
  if (o.engine.parallel.pipeline_parallel_size > 1) {
    fmt::print(stderr, "pipeline ({} stages): {} of {} steps issued while another was in flight\n",
               o.engine.parallel.pipeline_parallel_size, em.steps_overlapped, em.steps);
  }
  if (o.sched.spec.enabled()) {
    fmt::print(stderr,
               "speculative ({}, k {}): {} tokens proposed, {} accepted (acceptance rate {:.1f}%), "
               "{:.2f} accepted per verifying step; {} steps declined by the cost-aware switch{}\n",
               o.sched.spec.effective_method(), o.sched.spec.k, em.spec_proposed_tokens, em.spec_accepted_tokens,
               100.0 * em.spec_acceptance_rate(), em.spec_mean_accepted_length(), em.spec_declined_steps,
               em.spec_draft_ms > 0 ? fmt::format("; drafting {:.1f} ms", em.spec_draft_ms) : "");
  }
  return exit_code;
}

}  // namespace

Runner register_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  SamplingParams& sp = o->gen.sampling;
  CLI::App* sub = app.add_subcommand("run", "Generate text from a prompt (streams to stdout, summary to stderr)");
  add_engine_flags(*sub, o->engine);
  add_scheduler_flags(*sub, o->sched);
  add_spec_flags(*sub, o->sched.spec);
  auto* p =
      sub->add_option("-p,--prompt", o->prompts, "Prompt text (BOS added as the vocabulary says); repeat for several");
  auto* file = sub->add_option("--prompt-file", o->prompt_file, "File of prompts, one per line, run together");
  auto* ids = sub->add_option("--prompt-ids", o->prompt_ids, "Prompt as comma-separated token ids (no BOS added)");
  p->excludes(ids);
  file->excludes(ids);
  sub->add_flag("--json", o->json, "Print one JSON object per prompt (text, token_ids, finish_reason, metrics)");
  sub->add_option("-n,--n-predict", o->gen.max_tokens,
                  "Tokens to generate per choice (-1: until a stop condition; default 128, shortened to what fits "
                  "the context after the prompt)")
      ->check(CLI::Range(-1, 1 << 30))
      ->each([o](const std::string&) { o->n_set = true; });
  sub->add_option("--temp", sp.temperature, "Temperature (0 = greedy)")->check(CLI::Range(0.0f, 100.0f));
  sub->add_option("--top-k", sp.top_k, "Top-k (0 disables)")->check(CLI::Range(-1, 1 << 30));
  sub->add_option("--top-p", sp.top_p, "Top-p / nucleus, in (0, 1] (1 disables)")->check(CLI::Range(0.0f, 1.0f));
  sub->add_option("--min-p", sp.min_p, "Min-p (0 disables)")->check(CLI::Range(0.0f, 1.0f));
  sub->add_option("--typical-p", sp.typical_p, "Locally typical sampling mass, in (0, 1] (1 disables)")
      ->check(CLI::Range(0.0f, 1.0f));
  sub->add_option("--repetition-penalty", sp.repetition_penalty,
                  "Repetition penalty over prompt and output (1 disables)")
      ->check(CLI::Range(0.0f, 100.0f));
  sub->add_option("--presence-penalty", sp.presence_penalty, "Presence penalty over output tokens, in [-2, 2]")
      ->check(CLI::Range(-2.0f, 2.0f));
  sub->add_option("--frequency-penalty", sp.frequency_penalty, "Frequency penalty over output tokens, in [-2, 2]")
      ->check(CLI::Range(-2.0f, 2.0f));
  sub->add_option("--logit-bias", o->logit_bias, "ID=BIAS added to a token's logit (repeatable)");
  // -1 asks for a random seed, as in llama.cpp (CLI11 reads it as 2^64 - 1).
  sub->add_option("--seed", sp.seed, "Random seed (default or -1: random, printed when sampling)")
      ->each([o](const std::string& v) { o->seed_set = v != "-1"; });
  sub->add_option("--min-tokens", o->gen.min_tokens, "Suppress EOS and stop strings until this many tokens")
      ->check(CLI::Range(0, 1 << 30));
  sub->add_flag("--ignore-eos", o->gen.ignore_eos, "Keep generating past EOS");
  sub->add_option("--stop", o->gen.stop, "Stop string (repeatable, up to 16); the output ends before it");
  sub->add_option("--stop-token-id", o->gen.stop_token_ids, "Token id that ends generation (repeatable)");
  sub->add_option("--n", o->gen.n, "Completions of the prompt (they share its KV blocks)")->check(CLI::Range(1, 128));
  sub->add_option("--logprobs", o->gen.logprobs, "Print each token's logprob and this many alternatives to stderr")
      ->check(CLI::Range(0, 20));
  sub->add_flag("--print-ids", o->print_ids, "Print generated token ids (comma-separated) instead of text");
  auto* chat =
      sub->add_flag("--chat", o->chat, "Each prompt is a user message formatted with the model's chat template");
  auto* chat_file =
      sub->add_option("--chat-template", o->chat_template, "Jinja chat template file for the prompts (implies --chat)");
  sub->add_option("--system", o->system, "System message before each prompt (with --chat)");
  chat->excludes(ids);
  chat_file->excludes(ids);
  return [o, p, ids, file] {
    if (p->count() == 0 && ids->count() == 0 && file->count() == 0) {
      fmt::print(stderr, "tessera: error: run needs --prompt, --prompt-file or --prompt-ids (see --help)\n");
      return kExitUsage;
    }
    if (o->gen.sampling.top_p <= 0.0f || o->gen.sampling.typical_p <= 0.0f) {
      fmt::print(stderr, "tessera: error: --top-p and --typical-p must be in (0, 1] (see --help)\n");
      return kExitUsage;
    }
    if (int rc = check_spec_flags(o->sched.spec); rc != 0) return rc;
    if (o->gen.stop.size() > kMaxStopStrings) {
      fmt::print(stderr, "tessera: error: at most {} --stop strings (see --help)\n", kMaxStopStrings);
      return kExitUsage;
    }
    return run_main(*o);
  };
}

}  // namespace tessera::cli
