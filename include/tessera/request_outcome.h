// What one request produced, all at once: Engine::generate's answer.
#pragma once

#include <vector>

#include "tessera/engine_metrics.h"
#include "tessera/results.h"

namespace tessera {

struct RequestOutcome {
  std::vector<ChoiceResult> choices;  // one per GenerationOptions::n, in order
  RequestMetrics metrics;
};

}  // namespace tessera
