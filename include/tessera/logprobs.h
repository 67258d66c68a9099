// Log-probabilities reported with each generated token (OpenAI `logprobs`).
// They come from the model's own distribution — log_softmax of the raw logits
// before logit bias, penalties, temperature or truncation — so they describe
// the model, not the sampling settings (vLLM's default "raw_logprobs" choice).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace tessera {

inline constexpr int kMaxTopLogprobs = 20;

struct TokenLogprobs {
  int32_t token = -1;
  float logprob = 0;                           // of the chosen token
  std::vector<std::pair<int32_t, float>> top;  // [top_n] most likely (id, logprob), descending
};

// The TokenLogprobs of `chosen` from one row of raw logits: log_softmax in
// double precision, the top_n most likely tokens in descending order (ties:
// lower id first). logits[n_vocab] (finite or -inf); 0 <= top_n <=
// kMaxTopLogprobs. Implemented in src/sample/logprobs.cc.
TokenLogprobs compute_logprobs(std::span<const float> logits, int32_t chosen, int top_n);

}  // namespace tessera
