#include "engine/sequence.h"

#include <algorithm>

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

Result<StreamEvent> Sequence::on_logits(std::span<const float> logits) {
  StreamEvent ev;
  ev.choice = choice_;
  // Ends the choice without a token, flushing the held-back text.
  auto end_without_token = [&](FinishReason why) {
    finished_ = true;
    result_.finish = why;
    ev.text = stream_.finish();
    result_.text += ev.text;
    ev.finished = true;
    return ev;
  };
  // Scoring only: the prompt was computed, nothing is generated.
  if (options_.max_tokens == 0) return end_without_token(FinishReason::kLength);
  const auto generated = static_cast<int32_t>(result_.tokens.size());
  const bool allow_stop = generated >= options_.min_tokens;
  const auto pos = static_cast<int64_t>(tokens_.size());
  TESSERA_ASSIGN_OR_RETURN(const int32_t id,
                           sampler_.sample(logits, pos, allow_stop ? std::span<const int32_t>() : suppressed_));
  const bool stop_token =
      std::find(options_.stop_token_ids.begin(), options_.stop_token_ids.end(), id) != options_.stop_token_ids.end();
  if (stop_token || (!options_.ignore_eos && model_.is_eog(id))) return end_without_token(FinishReason::kStop);
  ev.token = id;
  sampler_.accept(id);
  tokens_.push_back(id);
  result_.tokens.push_back(id);
  if (options_.logprobs >= 0) {
    result_.logprobs.push_back(compute_logprobs(logits, id, options_.logprobs));
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

}  // namespace tessera
