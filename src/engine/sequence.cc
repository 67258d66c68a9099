#include "engine/sequence.h"

#include <algorithm>

#include "engine/speculative.h"

namespace tessera {

namespace {
SamplingParams choice_params(const SamplingParams& p, int32_t choice) {
  SamplingParams out = p;
  out.seed = choice_seed(p.seed, choice);
  return out;
}
}  // namespace

Sequence::Sequence(const Model& model, const GenerationOptions& options, const std::vector<int32_t>& prompt,
                   int32_t choice, int64_t context_limit)
    : model_(model),
      options_(options),
      choice_(choice),
      context_limit_(context_limit),
      num_prompt_(static_cast<int64_t>(prompt.size())),
      tokens_(prompt),
      suppressed_(options.stop_token_ids),
      sampler_(choice_params(options.sampling, choice), prompt),
      stream_(model.has_tokenizer() ? &model.tokenizer() : nullptr, options.stop) {
  if (!options.ignore_eos) suppressed_.insert(suppressed_.end(), model.eog_ids().begin(), model.eog_ids().end());
}

StreamEvent Sequence::end_without_token(FinishReason why) {
  StreamEvent ev;
  ev.choice = choice_;
  finished_ = true;
  result_.finish = why;
  ev.text = stream_.finish();
  result_.text += ev.text;
  ev.finished = true;
  return ev;
}

StreamEvent Sequence::emit(int32_t id, std::span<const float> row, bool allow_stop) {
  const auto generated = static_cast<int32_t>(result_.tokens.size());
  const auto pos = static_cast<int64_t>(tokens_.size());
  const bool stop_token =
      std::find(options_.stop_token_ids.begin(), options_.stop_token_ids.end(), id) != options_.stop_token_ids.end();
  if (stop_token || (!options_.ignore_eos && model_.is_eog(id))) return end_without_token(FinishReason::kStop);
  StreamEvent ev;
  ev.choice = choice_;
  ev.token = id;
  sampler_.accept(id);
  tokens_.push_back(id);
  result_.tokens.push_back(id);
  if (options_.logprobs >= 0) {
    result_.logprobs.push_back(compute_logprobs(row, id, options_.logprobs));
    ev.logprobs = &result_.logprobs.back();
  }
  StopMatcher::Output text = stream_.push(id, allow_stop);
  ev.text = std::move(text.text);
  const bool length = (options_.max_tokens >= 0 && generated + 1 >= options_.max_tokens) || pos + 1 >= context_limit_;
  if (text.stopped || length) {
    finished_ = true;
    result_.finish = text.stopped ? FinishReason::kStop : FinishReason::kLength;
    if (!text.stopped) ev.text += stream_.finish();
  }
  result_.text += ev.text;
  ev.finished = finished_;
  return ev;
}

Result<StreamEvent> Sequence::on_logits(std::span<const float> logits) {
  int32_t accepted = 0;
  TESSERA_ASSIGN_OR_RETURN(auto events, on_verify(logits, Proposal{}, &accepted));
  return std::move(events.front());
}

Result<std::vector<StreamEvent>> Sequence::on_verify(std::span<const float> logits, const Proposal& proposal,
                                                     int32_t* accepted) {
  std::vector<StreamEvent> events;
  *accepted = 0;
  // Scoring only: the prompt was computed, nothing is generated.
  if (options_.max_tokens == 0) {
    events.push_back(end_without_token(FinishReason::kLength));
    return events;
  }
  const size_t m = proposal.tokens.size();
  const size_t n_vocab = logits.size() / (m + 1);
  for (size_t i = 0; i <= m && !finished_; ++i) {
    const std::span<const float> row = logits.subspan(i * n_vocab, n_vocab);
    const bool allow_stop = static_cast<int32_t>(result_.tokens.size()) >= options_.min_tokens;
    const auto pos = static_cast<int64_t>(tokens_.size());
    TESSERA_RETURN_IF_ERROR(sampler_.prepare(row, allow_stop ? std::span<const int32_t>() : suppressed_));
    const int32_t proposed = i < m ? proposal.tokens[i] : -1;
    const std::span<const float> q = i < m && !proposal.q.empty()
                                         ? std::span<const float>(proposal.q).subspan(i * n_vocab, n_vocab)
                                         : std::span<const float>();
    const int32_t id = verify_position(sampler_, proposed, q, pos);
    events.push_back(emit(id, row, allow_stop));
    if (events.back().token != proposed) break;  // the correction or the bonus ends the run
    ++*accepted;
  }
  // emit() may have grown result_.logprobs: point the events at their entries.
  if (options_.logprobs >= 0) {
    size_t lp = result_.logprobs.size();
    for (auto it = events.rbegin(); it != events.rend(); ++it) {
      if (it->token >= 0) it->logprobs = &result_.logprobs[--lp];
    }
  }
  return events;
}

}  // namespace tessera
