// compute_logprobs: the log-probabilities of TokenLogprobs (tessera/logprobs.h)
// from one row of raw logits.
#pragma once

#include <cstdint>
#include <span>

#include "tessera/logprobs.h"

namespace tessera {

// logits[n_vocab] (finite or -inf); 0 <= top_n <= kMaxTopLogprobs.
TokenLogprobs compute_logprobs(std::span<const float> logits, int32_t chosen, int top_n);

}  // namespace tessera
