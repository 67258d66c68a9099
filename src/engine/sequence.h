// Sequence: one completion being generated — its tokens (prompt + output),
// sampler, text stream and stopping state (KV blocks belong to the caller). The
// continuous-batching EngineCore drives sequences through on_logits(): sample,
// check stop conditions, stream text; a speculating sequence is driven through
// on_verify() (speculative.h), which emits an accepted run the same way.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/choice_stream.h"
#include "engine/proposer.h"
#include "model/model.h"
#include "sample/logprobs.h"
#include "sample/sampler.h"
#include "tessera/generation_options.h"
#include "tessera/results.h"

namespace tessera {

class Sequence {
 public:
  // Borrows model and options (they outlive the sequence). `choice` selects
  // the random stream (choice_seed); `context_limit` caps prompt + output.
  Sequence(const Model& model, const GenerationOptions& options, const std::vector<int32_t>& prompt, int32_t choice,
           int64_t context_limit);

  // Samples the next token from the logits of the last token and updates the
  // state. Errors: NaN logits (kInvalidArgument).
  Result<StreamEvent> on_logits(std::span<const float> logits);

  // Verifies `proposal` (m tokens, following tokens()) against logits
  // [(m + 1) * n_vocab]: row i holds the target's logits for position
  // num_tokens() + i. Emits the accepted proposals and one more token (the
  // correction at the first rejection, or the bonus), each exactly as
  // on_logits would (stop tokens, stop strings, max_tokens and the context end
  // cut the run where they occur; penalties see each accepted token before
  // the next position is judged). Returns one event per emitted step;
  // *accepted counts the proposals that became tokens. Errors as on_logits.
  Result<std::vector<StreamEvent>> on_verify(std::span<const float> logits, const Proposal& proposal,
                                             int32_t* accepted);

  int32_t choice() const { return choice_; }
  bool finished() const { return finished_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  int64_t num_tokens() const { return static_cast<int64_t>(tokens_.size()); }
  int64_t num_prompt_tokens() const { return num_prompt_; }
  ChoiceResult& result() { return result_; }
  const Sampler& sampler() const { return sampler_; }

 private:
  const Model& model_;
  const GenerationOptions& options_;
  int32_t choice_;
  int64_t context_limit_;
  int64_t num_prompt_;
  std::vector<int32_t> tokens_;
  std::vector<int32_t> suppressed_;  // EOS and stop tokens, until min_tokens
  Sampler sampler_;
  ChoiceStream stream_;
  ChoiceResult result_;
  bool finished_ = false;

  // Emits `id` (drawn at this position from logits `row`): the stop checks,
  // logprobs, text and length rules of on_logits.
  StreamEvent emit(int32_t id, std::span<const float> row, bool allow_stop);
  StreamEvent end_without_token(FinishReason why);
};

}  // namespace tessera
