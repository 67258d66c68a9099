// Prompt scoring for `echo` + `logprobs` and `prompt_logprobs` on
// /v1/completions: the log-probability of each prompt token given the
// tokens before it, from the engine's prompt logits
// (GenerationOptions::prompt_logits, RequestEvent::prompt_logits).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tessera/logprobs.h"

namespace tessera::server {

// The score of prompt token i (i >= 1; token 0 has no context and no score).
struct PromptTokenScore {
  TokenLogprobs lp;  // lp.token = prompt[i]; lp.logprob = log_softmax(logits of position i - 1)[prompt[i]]; lp.top:
                     // top_n, descending
  int32_t rank = 1;  // 1 + the number of tokens with a higher logit (vLLM's rank)
};

// Scores from `rows` rows of logits ([rows, n_vocab], raw) of positions
// begin.., where the row of position p predicts prompt[p + 1]; rows at or
// past the last prompt position score nothing. Appends to `out` in order.
void score_prompt_rows(const float* logits, int32_t begin, int32_t rows, int32_t n_vocab,
                       std::span<const int32_t> prompt, int top_n, std::vector<PromptTokenScore>& out);

}  // namespace tessera::server
