// Sequence: one completion being generated — its tokens (prompt + output),
// sampler, text stream and stopping state (KV blocks belong to the caller). The
// continuous-batching EngineCore drives sequences through on_logits(): sample,
// check stop conditions, stream text.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/choice_stream.h"
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

  int32_t choice() const { return choice_; }
  bool finished() const { return finished_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  int64_t num_tokens() const { return static_cast<int64_t>(tokens_.size()); }
  int64_t num_prompt_tokens() const { return num_prompt_; }
  ChoiceResult& result() { return result_; }

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
};

}  // namespace tessera
