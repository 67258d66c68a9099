// One request through the engine on the caller's thread: submit, step until
// it finishes, return its results. For the CLI (bench, chat) and tests.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/engine_core.h"
#include "tessera/request_outcome.h"

namespace tessera {

// Submits `prompt` to `engine` and runs it until every request has finished;
// on_event sees each step that carries a token or text. Errors: submit's, or
// the request's own.
Result<RequestOutcome> run_to_completion(EngineCore& engine, const std::vector<int32_t>& prompt,
                                         const GenerationOptions& options,
                                         const std::function<void(const StreamEvent&)>& on_event = {});

}  // namespace tessera
