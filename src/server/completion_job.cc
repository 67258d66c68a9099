#include "server/completion_job.h"

namespace tessera::server {

using Json = nlohmann::ordered_json;

std::string sse_event(const nlohmann::json& j) {
  return "data: " + dump_json(j) + "\n\n";
}
std::string sse_event(const Json& j) {
  return "data: " + dump_json(j) + "\n\n";
}

CompletionJob::CompletionJob(ParsedRequest request, std::string id, int64_t created, const Vocab* vocab)
    : request_(std::move(request)), id_(std::move(id)), created_(created), vocab_(vocab) {
  results_.resize(request_.prompts.size() * static_cast<size_t>(request_.options.n));
  metrics_.resize(request_.prompts.size());
  prompt_scores_.resize(request_.prompts.size());
  prompt_sent_.assign(request_.prompts.size(), false);
  stream_offset_.assign(results_.size(), 0);
}

std::vector<size_t> CompletionJob::prompt_offsets(size_t p) const {
  const std::vector<int32_t>& ids = request_.prompts[p];
  const size_t text_size = p < request_.prompt_texts.size() ? request_.prompt_texts[p].size() : 0;
  std::vector<size_t> offsets(ids.size(), 0);
  if (!vocab_) return offsets;
  std::vector<size_t> ends(ids.size());  // bytes of the pieces of ids[0..i]
  size_t total = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= 0 && ids[i] < vocab_->size()) total += vocab_->token_piece(ids[i]).size();
    ends[i] = total;
  }
  // Decoding drops what the tokenizer added in front (SentencePiece's dummy
  // prefix space): the pieces' bytes past the decoded text's.
  auto decoded = vocab_->decode(ids);
  const size_t lead = decoded.ok() && decoded->size() <= total ? total - decoded->size() : 0;
  for (size_t i = 1; i < ids.size(); ++i) {
    const size_t start = ends[i - 1] > lead ? ends[i - 1] - lead : 0;
    offsets[i] = std::min(start, text_size);
  }
  return offsets;
}

std::string CompletionJob::piece(int32_t id) const {
  if (!vocab_ || id < 0 || id >= vocab_->size()) return std::to_string(id);
  const std::string t = vocab_->token_text(id);
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

Json CompletionJob::logprobs_json(const std::vector<TokenLogprobs>& lps, const size_t* prompt, size_t text_offset,
                                  size_t text_size) const {
  if (request_.endpoint == Endpoint::kChat) {
    Json content = Json::array();
    for (const auto& lp : lps) {
      auto entry = [&](int32_t id, float v) {
        const std::string p = piece(id);
        return Json{{"token", p}, {"logprob", v}, {"bytes", std::vector<uint8_t>(p.begin(), p.end())}};
      };
      Json e = entry(lp.token, lp.logprob);
      Json top = Json::array();
      for (const auto& [id, v] : lp.top) top.push_back(entry(id, v));
      e["top_logprobs"] = top;
      content.push_back(e);
    }
    return {{"content", content}};
  }
  // Legacy completions: top_logprobs is a dict of the `logprobs` most likely
  // tokens in descending probability (keys are token texts; of two tokens
  // with the same text the likelier is kept); the chosen token is in
  // `tokens` / `token_logprobs`.
  Json tokens = Json::array(), token_lps = Json::array(), tops = Json::array(), offsets = Json::array();
  auto add = [&](const TokenLogprobs& lp, size_t offset) {
    tokens.push_back(piece(lp.token));
    token_lps.push_back(lp.logprob);
    Json top = Json::object();
    for (const auto& [id, v] : lp.top) {
      const std::string key = piece(id);
      if (!top.contains(key)) top[key] = v;
    }
    tops.push_back(top);
    offsets.push_back(std::min(offset, text_size));
  };
  size_t offset = text_offset;
  if (prompt != nullptr) {
    const std::vector<int32_t>& ids = request_.prompts[*prompt];
    const std::vector<PromptTokenScore>& scores = prompt_scores_[*prompt];
    const std::vector<size_t> starts = prompt_offsets(*prompt);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i == 0 || i > scores.size()) {
        tokens.push_back(piece(ids[i]));
        token_lps.push_back(nullptr);
        tops.push_back(nullptr);
        offsets.push_back(std::min(starts[i], text_size));
        continue;
      }
      TokenLogprobs lp = scores[i - 1].lp;
      lp.top.resize(std::min(lp.top.size(), static_cast<size_t>(std::max(request_.options.logprobs, 0))));
      add(lp, starts[i]);
    }
    offset = request_.prompt_texts[*prompt].size();
  }
  for (const auto& lp : lps) {
    add(lp, offset);
    if (vocab_ && lp.token >= 0 && lp.token < vocab_->size()) offset += vocab_->token_piece(lp.token).size();
  }
  return {{"tokens", tokens}, {"token_logprobs", token_lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

Json CompletionJob::prompt_logprobs_json(size_t p) const {
  Json out = Json::array();
  const std::vector<int32_t>& ids = request_.prompts[p];
  const std::vector<PromptTokenScore>& scores = prompt_scores_[p];
  const auto top_n = static_cast<size_t>(std::max(request_.prompt_logprobs, 0));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i == 0 || i > scores.size()) {
      out.push_back(nullptr);
      continue;
    }
    const PromptTokenScore& s = scores[i - 1];
    Json entry = Json::object();
    entry[std::to_string(s.lp.token)] = {
        {"logprob", s.lp.logprob}, {"rank", s.rank}, {"decoded_token", piece(s.lp.token)}};
    for (size_t k = 0; k < s.lp.top.size() && k < top_n; ++k) {
      const auto& [id, v] = s.lp.top[k];
      const std::string key = std::to_string(id);
      if (!entry.contains(key)) entry[key] = {{"logprob", v}, {"rank", k + 1}, {"decoded_token", piece(id)}};
    }
    out.push_back(entry);
  }
  return out;
}

Json CompletionJob::chunk(Json choices) const {
  const bool chat = request_.endpoint == Endpoint::kChat;
  return {{"id", id_},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created_},
          {"model", request_.model},
          {"choices", std::move(choices)}};
}

std::string CompletionJob::stream_preamble() const {
  if (request_.endpoint != Endpoint::kChat) return {};
  Json choices = Json::array();
  for (size_t i = 0; i < results_.size(); ++i) {
    choices.push_back({{"index", i},
                       {"delta", {{"role", "assistant"}, {"content", ""}}},
                       {"logprobs", nullptr},
                       {"finish_reason", nullptr}});
  }
  return sse_event(chunk(choices));
}

std::string CompletionJob::prompt_chunks(size_t p) {
  if (request_.endpoint == Endpoint::kChat || !request_.stream || prompt_sent_[p]) return {};
  prompt_sent_[p] = true;
  if (!request_.echo && request_.prompt_logprobs < 0) return {};
  std::string out;
  const auto n = static_cast<size_t>(request_.options.n);
  for (size_t c = 0; c < n; ++c) {
    Json ch = {{"index", p * n + c}, {"text", request_.echo ? request_.prompt_texts[p] : std::string()}};
    const bool lp = request_.echo && request_.options.logprobs >= 0;
    ch["logprobs"] = lp ? logprobs_json({}, &p) : Json(nullptr);
    if (request_.echo) stream_offset_[p * n + c] = request_.prompt_texts[p].size();
    if (request_.prompt_logprobs >= 0) ch["prompt_logprobs"] = prompt_logprobs_json(p);
    ch["finish_reason"] = nullptr;
    out += sse_event(chunk(Json::array({ch})));
  }
  return out;
}

void CompletionJob::on_prompt_scores(size_t p, std::vector<PromptTokenScore> scores) {
  auto& all = prompt_scores_[p];
  all.insert(all.end(), std::make_move_iterator(scores.begin()), std::make_move_iterator(scores.end()));
}

std::string CompletionJob::on_step(size_t p, const StreamEvent& ev) {
  if (!request_.stream || (ev.text.empty() && !ev.logprobs)) return {};
  std::string out = prompt_chunks(p);
  const size_t index = p * static_cast<size_t>(request_.options.n) + static_cast<size_t>(ev.choice);
  Json c = {{"index", index}, {"finish_reason", nullptr}};
  // A streamed token's text_offset is the length of the choice's text sent
  // before this chunk (echo included), as vLLM streams it.
  Json lp = ev.logprobs ? logprobs_json({*ev.logprobs}, nullptr, stream_offset_[index]) : Json(nullptr);
  stream_offset_[index] += ev.text.size();
  if (request_.endpoint == Endpoint::kChat) {
    c["delta"] = {{"content", ev.text}};
  } else {
    c["text"] = ev.text;
  }
  c["logprobs"] = lp;
  return out + sse_event(chunk(Json::array({c})));
}

std::string CompletionJob::on_finished(size_t p, const RequestEvent& ev) {
  ++finished_;
  if (!ev.error.ok() && !error_) error_ = ev.error;
  if (ev.cancelled) cancelled_ = true;
  if (ev.metrics) metrics_[p] = *ev.metrics;
  const auto n = static_cast<size_t>(request_.options.n);
  if (ev.results) {
    for (size_t c = 0; c < ev.results->size() && c < n; ++c) results_[p * n + c] = (*ev.results)[c];
  }
  if (!request_.stream || !ev.error.ok() || ev.cancelled) return {};
  std::string out = prompt_chunks(p);
  Json choices = Json::array();
  for (size_t c = 0; c < n; ++c) {
    Json ch = {
        {"index", p * n + c}, {"logprobs", nullptr}, {"finish_reason", finish_reason_name(results_[p * n + c].finish)}};
    if (request_.endpoint == Endpoint::kChat) {
      ch["delta"] = Json::object();
    } else {
      ch["text"] = "";
    }
    choices.push_back(ch);
  }
  return out + sse_event(chunk(choices));
}

CompletionJob::UsageCounts CompletionJob::usage_counts() const {
  UsageCounts u;
  for (const auto& m : metrics_) {
    u.prompt += m.prompt_tokens;
    u.cached += m.cached_tokens;
  }
  for (const auto& r : results_) u.completion += static_cast<int64_t>(r.tokens.size());
  return u;
}

void CompletionJob::fill_log_record(RequestLogRecord& r) const {
  const UsageCounts u = usage_counts();
  r.prompt_tokens = u.prompt;
  r.cached_tokens = u.cached;
  r.generated_tokens = u.completion;
  r.ttft_ms.reset();
  for (const auto& m : metrics_) {
    if (m.generated_tokens > 0 && (!r.ttft_ms || m.ttft_ms < *r.ttft_ms)) r.ttft_ms = m.ttft_ms;
  }
  r.finish_reason.clear();
  if (cancelled_) {
    r.finish_reason = "cancelled";
    return;
  }
  if (finished_ == 0) return;
  for (const auto& c : results_) {
    if (!r.finish_reason.empty()) r.finish_reason += ',';
    r.finish_reason += finish_reason_name(c.finish);
  }
}

Json CompletionJob::usage() const {
  const UsageCounts counts = usage_counts();
  const int64_t prompt = counts.prompt, completion = counts.completion, cached = counts.cached;
  int64_t proposed = 0, accepted = 0, spec_steps = 0;
  bool speculative = false;
  for (const auto& m : metrics_) {
    speculative = speculative || m.speculative;
    proposed += m.spec_proposed_tokens;
    accepted += m.spec_accepted_tokens;
    spec_steps += m.spec_steps;
  }
  Json u = {{"prompt_tokens", prompt},
            {"completion_tokens", completion},
            {"total_tokens", prompt + completion},
            {"prompt_tokens_details", {{"cached_tokens", cached}}}};
  // tessera's extension, whenever the request ran with speculative decoding
  // (zeros when the cost-aware switch verified nothing).
  if (speculative) {
    u["speculative"] = {
        {"proposed_tokens", proposed},
        {"accepted_tokens", accepted},
        {"acceptance_rate", proposed > 0 ? static_cast<double>(accepted) / static_cast<double>(proposed) : 0.0},
        {"mean_accepted_length",
         spec_steps > 0 ? static_cast<double>(accepted) / static_cast<double>(spec_steps) : 0.0}};
  }
  return u;
}

Json CompletionJob::response() const {
  const bool chat = request_.endpoint == Endpoint::kChat;
  const auto n = static_cast<size_t>(request_.options.n);
  Json choices = Json::array();
  for (size_t i = 0; i < results_.size(); ++i) {
    const ChoiceResult& r = results_[i];
    const size_t p = i / n;
    Json c = {{"index", i}};
    const bool want_lp = chat ? request_.chat_logprobs : request_.options.logprobs >= 0;
    if (chat) {
      c["message"] = {{"role", "assistant"}, {"content", r.text}};
      c["logprobs"] = want_lp ? logprobs_json(r.logprobs) : Json(nullptr);
    } else {
      const size_t text_size = (request_.echo ? request_.prompt_texts[p].size() : 0) + r.text.size();
      c["text"] = request_.echo ? request_.prompt_texts[p] + r.text : r.text;
      c["logprobs"] = want_lp ? logprobs_json(r.logprobs, request_.echo ? &p : nullptr, 0, text_size) : Json(nullptr);
      if (request_.prompt_logprobs >= 0) c["prompt_logprobs"] = prompt_logprobs_json(p);
    }
    c["finish_reason"] = finish_reason_name(r.finish);
    choices.push_back(c);
  }
  Json out = {{"id", id_},           {"object", chat ? "chat.completion" : "text_completion"},
              {"created", created_}, {"model", request_.model},
              {"choices", choices},  {"usage", usage()}};
  // Chat: vLLM's response-level prompt_logprobs (of the rendered conversation's tokens).
  if (chat && request_.prompt_logprobs >= 0) out["prompt_logprobs"] = prompt_logprobs_json(0);
  return out;
}

std::string CompletionJob::stream_epilogue() const {
  std::string out;
  if (request_.include_usage) {
    Json u = chunk(Json::array());
    u["usage"] = usage();
    out += sse_event(u);
  }
  return out + "data: [DONE]\n\n";
}

}  // namespace tessera::server
