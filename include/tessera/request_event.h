// What a request's callback receives from the engine, step by step.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/engine_metrics.h"
#include "tessera/results.h"
#include "tessera/status.h"

namespace tessera {

// What a request's callback receives. `finished` requests carry their results.
struct RequestEvent {
  uint64_t request_id = 0;
  StreamEvent step;                                    // one choice's new token / text (step.token < 0: none)
  bool request_finished = false;                       // every choice ended (or the request failed / was cancelled)
  const std::vector<ChoiceResult>* results = nullptr;  // when request_finished
  const RequestMetrics* metrics = nullptr;             // when request_finished
  Status error;                                        // non-ok when the request failed
  bool cancelled = false;                              // finished by cancel()
  // GenerationOptions::prompt_logits: rows [prompt_logits_rows, n_vocab] of
  // prompt positions prompt_logits_begin.. (each position delivered once,
  // in order; valid during the callback only). Null otherwise.
  const float* prompt_logits = nullptr;
  int32_t prompt_logits_begin = 0;
  int32_t prompt_logits_rows = 0;
};

}  // namespace tessera
