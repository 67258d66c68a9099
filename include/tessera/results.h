// What a request produces: streamed steps and each choice's final result.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/generation_options.h"
#include "tessera/logprobs.h"

namespace tessera {

// One step of one choice, streamed as it happens.
struct StreamEvent {
  int32_t choice = 0;
  int32_t token = -1;                       // the generated token; -1 when the event only flushes text
  std::string text;                         // text released by this step (may be empty)
  const TokenLogprobs* logprobs = nullptr;  // when requested
  bool finished = false;                    // the choice ended with this event
};

struct ChoiceResult {
  std::vector<int32_t> tokens;  // generated tokens (EOS / stop tokens excluded)
  std::string text;             // their text, cut before any stop string
  FinishReason finish = FinishReason::kLength;
  std::vector<TokenLogprobs> logprobs;  // one per token, when requested
};

}  // namespace tessera
