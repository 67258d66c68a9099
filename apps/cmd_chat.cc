// `tessera chat`: an interactive multi-turn chat in the terminal, formatted
// with the model's chat template (or --chat-template FILE), streaming replies.
#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "cli_common.h"
#include "template/chat_template.h"

namespace tessera::cli {

namespace {

struct ChatOptions {
  EngineFlags engine;
  SpeculativeOptions spec;
  std::string system;
  std::string template_file;
  int32_t n_predict = -1;
  SamplingParams sampling;
  bool seed_set = false;
};

Result<std::string> template_source(const ChatOptions& o, const Model& m) {
  if (!o.template_file.empty()) {
    std::ifstream in(o.template_file, std::ios::binary);
    if (!in) return not_found(o.template_file + ": cannot open chat template");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  if (m.tokenizer().chat_template().empty()) {
    return not_found(m.path() + " has no chat template; pass one with --chat-template FILE");
  }
  return m.tokenizer().chat_template();
}

std::string token_text_or_empty(const Tokenizer& t, int32_t id) {
  return id >= 0 && id < t.n_vocab() ? t.token_text(id) : std::string();
}

int chat_main(const ChatOptions& o) {
  auto kv_bytes = kv_memory_bytes(o.engine);
  if (!kv_bytes.ok()) return fail(kv_bytes.status());
  auto model = Model::load(o.engine.model, load_options(o.engine));
  if (!model.ok()) return fail(model.status());
  const Model& m = **model;
  if (!m.has_tokenizer()) return fail(invalid_argument(o.engine.model + " has no tokenizer"));
  auto source = template_source(o, m);
  if (!source.ok()) return fail(source.status());
  auto tmpl = ChatTemplate::parse(*source);
  if (!tmpl.ok()) return fail(tmpl.status());
  const int64_t ctx = context_size(o.engine, m.config());
  // One conversation at a time; each turn's prompt reuses the KV blocks of
  // the previous turns through the prefix cache.
  SchedulerFlags sched;
  sched.max_num_seqs = 1;
  sched.spec = o.spec;
  auto engine = EngineCore::create(m, engine_config(o.engine, sched, *kv_bytes, ctx));
  if (!engine.ok()) return fail(engine.status());
  const int64_t ctx_tokens = (*engine)->context_tokens();
  const Tokenizer& tok = m.tokenizer();
  const std::string bos = token_text_or_empty(tok, tok.bos_id());
  const std::string eos = token_text_or_empty(tok, tok.eos_id());
  nlohmann::json messages = nlohmann::json::array();
  if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
  GenerationOptions opts;
  opts.max_tokens = o.n_predict;
  opts.sampling = o.sampling;
  if (!o.seed_set) opts.sampling.seed = std::random_device{}();
  fmt::print(stderr, "tessera chat: type a message; /exit or end of input quits.\n");
  std::string line;
  while (true) {
    fmt::print("> ");
    std::fflush(stdout);
    if (!std::getline(std::cin, line) || line == "/exit") break;
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    auto prompt_text = apply_chat_template(*tmpl, messages, true, bos, eos);
    if (!prompt_text.ok()) return fail(prompt_text.status());
    // The template writes BOS itself when it wants one.
    const bool template_has_bos = !bos.empty() && prompt_text->rfind(bos, 0) == 0;
    const auto prompt = tok.encode(*prompt_text, /*add_special=*/!template_has_bos, /*parse_special=*/true);
    // The reply may run to the end of the context (as -n -1 does).
    GenerationOptions turn = opts;
    const auto room = std::max<int64_t>(0, ctx_tokens - static_cast<int64_t>(prompt.size()));
    if (turn.max_tokens < 0 || turn.max_tokens > room) turn.max_tokens = static_cast<int32_t>(room);
    auto result = run_to_completion(**engine, prompt, turn, [&](const StreamEvent& ev) {
      std::fwrite(ev.text.data(), 1, ev.text.size(), stdout);
      std::fflush(stdout);
    });
    if (!result.ok()) {
      fmt::print(stderr, "\ntessera: error: {}\n", result.status().message());
      messages.erase(messages.end() - 1);
      continue;
    }
    fmt::print("\n");
    std::fflush(stdout);  // the reply's line ends before a note on stderr
    const ChoiceResult& reply = result->choices[0];
    if (reply.finish == FinishReason::kLength &&
        static_cast<int64_t>(prompt.size() + reply.tokens.size()) >= ctx_tokens - 1) {
      fmt::print(stderr,
                 "tessera: the reply was cut: the conversation filled the context of {} tokens (restart, or "
                 "raise -c / --kv-cache-memory)\n",
                 ctx_tokens);
    }
    messages.push_back({{"role", "assistant"}, {"content", reply.text}});
  }
  return 0;
}

}  // namespace

Runner register_chat(CLI::App& app) {
  auto o = std::make_shared<ChatOptions>();
  CLI::App* sub = app.add_subcommand("chat", "Interactive multi-turn chat with the model's chat template");
  add_engine_flags(*sub, o->engine);
  sub->add_option("--system", o->system, "System message");
  sub->add_option("--chat-template", o->template_file, "Jinja chat template file (overrides the model's)");
  sub->add_option("-n,--n-predict", o->n_predict, "Maximum tokens per reply (-1: until end of turn)")
      ->check(CLI::Range(-1, 1 << 30));
  sub->add_option("--temp", o->sampling.temperature, "Temperature (0 = greedy)")->check(CLI::Range(0.0f, 100.0f));
  sub->add_option("--top-k", o->sampling.top_k, "Top-k (0 or -1 disables)")->check(CLI::Range(-1, 1 << 30));
  sub->add_option("--top-p", o->sampling.top_p, "Top-p (1 disables)")->check(CLI::Range(0.0f, 1.0f));
  sub->add_option("--min-p", o->sampling.min_p, "Min-p (0 disables)")->check(CLI::Range(0.0f, 1.0f));
  sub->add_option("--seed", o->sampling.seed, "Random seed")->each([o](const std::string&) { o->seed_set = true; });
  add_spec_flags(*sub, o->spec);
  return [o] {
    if (int rc = check_spec_flags(o->spec); rc != 0) return rc;
    return chat_main(*o);
  };
}

}  // namespace tessera::cli
