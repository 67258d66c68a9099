// Per-request sampling parameters (the basic set; the full OpenAI / vLLM set
// arrives with the sampler issue). Defaults follow llama.cpp's CLI.
#pragma once

#include <cstdint>

#include "tessera/status.h"

namespace tessera {

struct SamplingParams {
  float temperature = 0.8f;  // 0 = greedy (argmax)
  int32_t top_k = 40;        // <= 0 disables
  float top_p = 0.95f;       // 1 disables; keeps the smallest set with cumulative probability >= top_p
  float min_p = 0.05f;       // 0 disables; keeps tokens with p >= min_p * p_max
  uint64_t seed = 0;         // random stream of the request

  // kInvalidArgument naming the field: negative or non-finite temperature,
  // top_p outside (0, 1], min_p outside [0, 1].
  Status validate() const;
};

}  // namespace tessera
