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

#include "chat_template_source.h"
#include "cli_common.h"
#include "tessera/chat.h"

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

int chat_main(const ChatOptions& o) {
  // One conversation at a time; each turn's prompt reuses the KV blocks of
  // the previous turns through the prefix cache.
  SchedulerFlags sched;
  sched.max_num_seqs = 1;
  sched.spec = o.spec;
  auto engine = create_engine(o.engine, sched);
  if (!engine.ok()) return fail(engine.status());
  const Vocab* vocab = (*engine)->vocab();
  if (vocab == nullptr) return fail(invalid_argument(o.engine.model + " has no tokenizer"));
  auto source = chat_template_source(o.template_file, o.engine.model, *vocab);
  if (!source.ok()) return fail(source.status());
  auto formatter = ChatFormatter::create(*vocab, *source);
  if (!formatter.ok()) return fail(formatter.status());
  const int64_t ctx_tokens = (*engine)->model_info().context;
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
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
    // What the user types is plain text: only the template's own spans may
    // become control tokens (tessera/chat.h). Terminal input may hold
    // invalid UTF-8: it becomes U+FFFD in the JSON text.
    const std::string messages_json = messages.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    auto rendered = (*formatter)->render(messages_json);
    if (!rendered.ok()) return fail(rendered.status());
    const std::vector<int32_t>& prompt = rendered->tokens;
    // The reply may run to the end of the context (as -n -1 does).
    GenerationOptions turn = opts;
    const auto room = std::max<int64_t>(0, ctx_tokens - static_cast<int64_t>(prompt.size()));
    if (turn.max_tokens < 0 || turn.max_tokens > room) turn.max_tokens = static_cast<int32_t>(room);
    auto result = (*engine)->generate(prompt, turn, [&](const StreamEvent& ev) {
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
