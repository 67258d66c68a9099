#include "server/completion_job.h"

namespace tessera::server {

using nlohmann::json;

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

CompletionJob::CompletionJob(ParsedRequest request, std::string id, int64_t created, const Tokenizer* tokenizer)
    : request_(std::move(request)), id_(std::move(id)), created_(created), tokenizer_(tokenizer) {
  results_.resize(request_.prompts.size() * static_cast<size_t>(request_.options.n));
  metrics_.resize(request_.prompts.size());
}

std::string CompletionJob::piece(int32_t id) const {
  if (!tokenizer_ || id < 0 || id >= tokenizer_->n_vocab()) return std::to_string(id);
  const std::string& t = tokenizer_->token_text(id);
  constexpr std::string_view kSpm = "\xE2\x96\x81";  // U+2581, SentencePiece's space
  std::string out;
  out.reserve(t.size());
  for (size_t i = 0; i < t.size();) {
    if (std::string_view(t).substr(i, kSpm.size()) == kSpm) {
      out.push_back(' ');
      i += kSpm.size();
    } else {
      out.push_back(t[i++]);
    }
  }
  return out;
}

json CompletionJob::logprobs_json(const std::vector<TokenLogprobs>& lps) const {
  if (request_.endpoint == Endpoint::kChat) {
    json content = json::array();
    for (const auto& lp : lps) {
      auto entry = [&](int32_t id, float v) {
        const std::string p = piece(id);
        return json{{"token", p}, {"logprob", v}, {"bytes", std::vector<uint8_t>(p.begin(), p.end())}};
      };
      json e = entry(lp.token, lp.logprob);
      json top = json::array();
      for (const auto& [id, v] : lp.top) top.push_back(entry(id, v));
      e["top_logprobs"] = top;
      content.push_back(e);
    }
    return {{"content", content}};
  }
  json tokens = json::array(), token_lps = json::array(), tops = json::array(), offsets = json::array();
  size_t offset = 0;
  for (const auto& lp : lps) {
    const std::string p = piece(lp.token);
    tokens.push_back(p);
    token_lps.push_back(lp.logprob);
    json top = json::object();
    for (const auto& [id, v] : lp.top) top[piece(id)] = v;
    tops.push_back(top);
    offsets.push_back(offset);
    offset += p.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", token_lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json CompletionJob::chunk(json choices) const {
  const bool chat = request_.endpoint == Endpoint::kChat;
  return {{"id", id_},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created_},
          {"model", request_.model},
          {"choices", std::move(choices)}};
}

std::string CompletionJob::stream_preamble() const {
  if (request_.endpoint != Endpoint::kChat) return {};
  json choices = json::array();
  for (size_t i = 0; i < results_.size(); ++i) {
    choices.push_back({{"index", i}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr},
                       {"finish_reason", nullptr}});
  }
  return sse_event(chunk(choices));
}

std::string CompletionJob::on_step(size_t p, const StreamEvent& ev) {
  if (!request_.stream || (ev.text.empty() && !ev.logprobs)) return {};
  const size_t index = p * static_cast<size_t>(request_.options.n) + static_cast<size_t>(ev.choice);
  json c = {{"index", index}, {"finish_reason", nullptr}};
  json lp = ev.logprobs ? logprobs_json({*ev.logprobs}) : json(nullptr);
  if (request_.endpoint == Endpoint::kChat) {
    c["delta"] = {{"content", ev.text}};
  } else {
    c["text"] = ev.text;
  }
  c["logprobs"] = lp;
  return sse_event(chunk(json::array({c})));
}

std::string CompletionJob::on_finished(size_t p, const RequestEvent& ev) {
  ++finished_;
  if (!ev.error.ok() && !error_) error_ = ev.error;
  if (ev.metrics) metrics_[p] = *ev.metrics;
  const auto n = static_cast<size_t>(request_.options.n);
  if (ev.results) {
    for (size_t c = 0; c < ev.results->size() && c < n; ++c) results_[p * n + c] = (*ev.results)[c];
  }
  if (!request_.stream || !ev.error.ok() || ev.cancelled) return {};
  json choices = json::array();
  for (size_t c = 0; c < n; ++c) {
    json ch = {{"index", p * n + c}, {"logprobs", nullptr}, {"finish_reason", finish_reason_name(results_[p * n + c].finish)}};
    if (request_.endpoint == Endpoint::kChat) {
      ch["delta"] = json::object();
    } else {
      ch["text"] = "";
    }
    choices.push_back(ch);
  }
  return sse_event(chunk(choices));
}

json CompletionJob::usage() const {
  int64_t prompt = 0, completion = 0, cached = 0, proposed = 0, accepted = 0, spec_steps = 0;
  for (const auto& m : metrics_) {
    prompt += m.prompt_tokens;
    cached += m.cached_tokens;
    proposed += m.spec_proposed_tokens;
    accepted += m.spec_accepted_tokens;
    spec_steps += m.spec_steps;
  }
  for (const auto& r : results_) completion += static_cast<int64_t>(r.tokens.size());
  json u = {{"prompt_tokens", prompt},
            {"completion_tokens", completion},
            {"total_tokens", prompt + completion},
            {"prompt_tokens_details", {{"cached_tokens", cached}}}};
  // tessera's extension, only when the request speculated.
  if (proposed > 0) {
    u["speculative"] = {{"proposed_tokens", proposed},
                        {"accepted_tokens", accepted},
                        {"acceptance_rate", static_cast<double>(accepted) / static_cast<double>(proposed)},
                        {"mean_accepted_length",
                         spec_steps > 0 ? static_cast<double>(accepted) / static_cast<double>(spec_steps) : 0.0}};
  }
  return u;
}

json CompletionJob::response() const {
  const bool chat = request_.endpoint == Endpoint::kChat;
  json choices = json::array();
  for (size_t i = 0; i < results_.size(); ++i) {
    const ChoiceResult& r = results_[i];
    json c = {{"index", i}, {"finish_reason", finish_reason_name(r.finish)}};
    const bool want_lp = chat ? request_.chat_logprobs : request_.options.logprobs >= 0;
    c["logprobs"] = want_lp ? logprobs_json(r.logprobs) : json(nullptr);
    if (chat) {
      c["message"] = {{"role", "assistant"}, {"content", r.text}};
    } else {
      c["text"] = r.text;
    }
    choices.push_back(c);
  }
  return {{"id", id_},
          {"object", chat ? "chat.completion" : "text_completion"},
          {"created", created_},
          {"model", request_.model},
          {"choices", choices},
          {"usage", usage()}};
}

std::string CompletionJob::stream_epilogue() const {
  std::string out;
  if (request_.include_usage) {
    json u = chunk(json::array());
    u["usage"] = usage();
    out += sse_event(u);
  }
  return out + "data: [DONE]\n\n";
}

}  // namespace tessera::server
