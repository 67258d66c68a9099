// Log-probabilities reported with each generated token (OpenAI `logprobs`).
// They come from the model's own distribution — log_softmax of the raw logits
// before logit bias, penalties, temperature or truncation — so they describe
// the model, not the sampling settings (vLLM's default "raw_logprobs" choice).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace tessera {

inline constexpr int kMaxTopLogprobs = 20;

struct TokenLogprobs {
  int32_t token = -1;
  float logprob = 0;                           // of the chosen token
  std::vector<std::pair<int32_t, float>> top;  // [top_n] most likely (id, logprob), descending
};

}  // namespace tessera
