// compute_logprobs: the log-probabilities of TokenLogprobs (tessera/logprobs.h)
// from one row of raw logits.
#pragma once

#include <cstdint>
#include <span>

#include "tessera/logprobs.h"

namespace tessera {

// compute_logprobs() is declared in tessera/logprobs.h (public: the server
// scores prompts with it).

}  // namespace tessera
