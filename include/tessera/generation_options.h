// What one request asks of generation: sampling, stopping, logprobs and n.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/logprobs.h"
#include "tessera/sampling_params.h"
#include "tessera/status.h"

namespace tessera {

// Stop strings a request may give (GenerationOptions::stop).
inline constexpr size_t kMaxStopStrings = 16;

enum class FinishReason { kStop, kLength };

inline const char* finish_reason_name(FinishReason r) {
  return r == FinishReason::kStop ? "stop" : "length";
}

struct GenerationOptions {
  int32_t max_tokens = 128;             // per choice; -1: until a stop condition or the context is full
  int32_t min_tokens = 0;               // EOS, stop tokens and stop strings are suppressed until reached
  bool ignore_eos = false;              // keep generating past EOS (stop_token_ids still stop)
  std::vector<std::string> stop;        // up to kMaxStopStrings; the text ends before them
  std::vector<int32_t> stop_token_ids;  // tokens that end a choice (not part of its text)
  int32_t n = 1;                        // completions of the prompt; they share its KV blocks
  int32_t logprobs = -1;                // -1: none; 0..20: the chosen token's logprob and this many alternatives
  SamplingParams sampling;
  // Deliver the logits of every prompt position to the request's callback
  // (RequestEvent::prompt_logits; row p predicts prompt token p + 1): prompt
  // scoring and perplexity. The request then computes its whole prompt (no
  // prefix-cache hit) and must have n == 1. With max_tokens == 0 nothing is
  // generated.
  bool prompt_logits = false;
  // Use the engine's speculative decoding when it has one (EngineOptions::spec);
  // false: this request decodes one token per step beside speculating ones.
  bool speculative = true;

  // kInvalidArgument naming the field (sampling parameters included).
  Status validate(int32_t n_vocab) const;
};

}  // namespace tessera
