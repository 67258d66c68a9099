// Per-request sampling parameters: the OpenAI / vLLM / llama.cpp set.
// Defaults follow llama.cpp's CLI (temperature 0.8, top-k 40, top-p 0.95,
// min-p 0.05); a server maps OpenAI defaults onto the same struct.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tessera/status.h"

namespace tessera {

struct SamplingParams {
  float temperature = 0.8f;        // 0 = greedy (argmax)
  int32_t top_k = 40;              // <= 0 disables
  float top_p = 0.95f;             // 1 disables; smallest set with cumulative probability >= top_p
  float min_p = 0.05f;             // 0 disables; keeps p >= min_p * p_max
  float typical_p = 1.0f;          // 1 disables; locally typical sampling (Meister et al. 2022)
  float repetition_penalty = 1.0f;  // 1 disables; multiplicative over prompt and output tokens (HF / CTRL)
  float presence_penalty = 0.0f;   // additive, over output tokens (OpenAI)
  float frequency_penalty = 0.0f;  // additive per occurrence, over output tokens (OpenAI)
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id -> added to its logit
  uint64_t seed = 0;               // the request's random stream

  // kInvalidArgument naming the field: temperature < 0 or not finite,
  // top_p outside (0, 1], min_p or typical_p outside [0, 1] / (0, 1],
  // repetition_penalty <= 0, penalties outside [-2, 2], a logit_bias id
  // outside [0, n_vocab) or a non-finite bias.
  Status validate(int32_t n_vocab) const;
};

}  // namespace tessera
