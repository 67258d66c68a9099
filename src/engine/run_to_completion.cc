#include "engine/run_to_completion.h"

namespace tessera {

Result<RequestOutcome> run_to_completion(EngineCore& engine, const std::vector<int32_t>& prompt,
                                         const GenerationOptions& options,
                                         const std::function<void(const StreamEvent&)>& on_event) {
  RequestOutcome out;
  Status error;
  auto id = engine.submit(prompt, options, [&](const RequestEvent& ev) {
    if (on_event && (ev.step.token >= 0 || !ev.step.text.empty())) on_event(ev.step);
    if (ev.request_finished) {
      error = ev.error;
      if (ev.results != nullptr) out.choices = *ev.results;
      if (ev.metrics != nullptr) out.metrics = *ev.metrics;
    }
  });
  if (!id.ok()) return id.status();
  engine.run_until_idle();
  if (!error.ok()) return error;
  return out;
}

}  // namespace tessera
