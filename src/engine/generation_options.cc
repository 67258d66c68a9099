#include "tessera/generation_options.h"

#include "sample/stop_matcher.h"

namespace tessera {

Status GenerationOptions::validate(int32_t n_vocab) const {
  TESSERA_RETURN_IF_ERROR(sampling.validate(n_vocab));
  if (max_tokens < -1) return invalid_argument("max_tokens must be >= 0 (or -1 for no limit)");
  if (min_tokens < 0) return invalid_argument("min_tokens must be >= 0");
  if (max_tokens >= 0 && min_tokens > max_tokens) return invalid_argument("min_tokens must not exceed max_tokens");
  if (stop.size() > kMaxStopStrings) {
    return invalid_argument("at most " + std::to_string(kMaxStopStrings) + " stop strings are allowed, got " +
                            std::to_string(stop.size()));
  }
  for (int32_t id : stop_token_ids) {
    if (id < 0 || id >= n_vocab)
      return invalid_argument("stop token id " + std::to_string(id) + " is outside the vocabulary");
  }
  if (n < 1 || n > 128) return invalid_argument("n must be in [1, 128], got " + std::to_string(n));
  if (logprobs < -1 || logprobs > kMaxTopLogprobs) {
    return invalid_argument("logprobs must be in [0, " + std::to_string(kMaxTopLogprobs) + "], got " +
                            std::to_string(logprobs));
  }
  if (prompt_logits && n != 1) return invalid_argument("prompt logits need n == 1");
  return {};
}

}  // namespace tessera
