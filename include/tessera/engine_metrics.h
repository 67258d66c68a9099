// Metrics of requests and of the engine, kept in one place for the CLI and
// the HTTP server to publish. Times are milliseconds.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera {

struct RequestMetrics {
  double queue_ms = 0;         // arrival -> first scheduled
  double ttft_ms = 0;          // arrival -> first generated token
  double e2e_ms = 0;           // arrival -> finished
  std::vector<double> itl_ms;  // inter-token latencies (between consecutive tokens of choice 0)
  double tpot_ms() const;      // mean of itl_ms (time per output token after the first)
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;     // prompt tokens reused from the prefix cache
  int32_t generated_tokens = 0;  // all choices
  int32_t preemptions = 0;
  // Speculative decoding (all choices): whether the request speculated at all
  // (the engine has a proposer and the request did not opt out, even if the
  // cost-aware switch then verified nothing), tokens proposed and verified,
  // of those accepted, and the sequence-steps that verified at least one
  // proposal.
  bool speculative = false;
  int32_t spec_proposed_tokens = 0;
  int32_t spec_accepted_tokens = 0;
  int32_t spec_steps = 0;
  double spec_acceptance_rate() const {
    return spec_proposed_tokens > 0 ? static_cast<double>(spec_accepted_tokens) / spec_proposed_tokens : 0;
  }
  // Proposals accepted per verifying step (each such step also emits one more token).
  double spec_mean_accepted_length() const {
    return spec_steps > 0 ? static_cast<double>(spec_accepted_tokens) / spec_steps : 0;
  }
};

struct EngineMetrics {
  int32_t running = 0;
  int32_t waiting = 0;
  int32_t kv_blocks_used = 0;
  int32_t kv_blocks_free = 0;
  // Prefix cache: each sequence's prompt tokens counted once, at its first
  // admission (not again when it is re-admitted after a preemption), and of
  // those the ones taken from the cache. 0 with the prefix cache off.
  int64_t prefix_query_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t preemptions = 0;             // sequences preempted (each time)
  int64_t prompt_tokens_computed = 0;  // prefill tokens run through the model (recomputation included)
  int64_t generated_tokens = 0;
  // Finished choices of successful requests by finish reason (a request with
  // n choices adds n); cancelled and failed requests count once each, never
  // as successes.
  int64_t finished_stop = 0;
  int64_t finished_length = 0;
  int64_t finished_cancelled = 0;  // requests cancelled (client abort, disconnect, Engine::cancel)
  int64_t finished_error = 0;      // requests that ended with an error
  int64_t steps = 0;               // steps that ran a forward pass
  // Steps issued while an earlier one was still in flight (pipeline
  // parallelism, P > 1: docs/parallelism.md); 0 on one stage.
  int64_t steps_overlapped = 0;
  // Forward time of steps that carried prompt tokens / of decode-only steps.
  // With steps in flight, a step counts from the later of its issue and the
  // previous step's completion to its completion, so overlapping steps share
  // the wall time instead of counting it twice.
  double prefill_ms = 0;
  double decode_ms = 0;
  int64_t decode_tokens = 0;  // tokens computed in decode-only steps (proposed tokens included)
  int64_t decode_steps = 0;   // decode-only steps
  // Speculative decoding, as in RequestMetrics, over every request so far.
  int64_t spec_proposed_tokens = 0;
  int64_t spec_accepted_tokens = 0;
  int64_t spec_steps = 0;
  // Time in the draft model's proposing (its forward calls and drafting), and
  // steps in which the cost-aware switch (SpeculativeOptions::cost_aware)
  // verified no proposal because they would not have paid.
  double spec_draft_ms = 0;
  int64_t spec_declined_steps = 0;
  double spec_acceptance_rate() const {
    return spec_proposed_tokens > 0
               ? static_cast<double>(spec_accepted_tokens) / static_cast<double>(spec_proposed_tokens)
               : 0;
  }
  double spec_mean_accepted_length() const {
    return spec_steps > 0 ? static_cast<double>(spec_accepted_tokens) / static_cast<double>(spec_steps) : 0;
  }
  // Parallel runs (tessera/parallel.h), as rank 0 sees them: wall time inside
  // communicator calls (step broadcast, all-reduces, all-gathers, stage
  // transfers) and the payload bytes rank 0 sent, split like prefill_ms /
  // decode_ms. Zero on a single rank.
  double prefill_comm_ms = 0;
  double decode_comm_ms = 0;
  uint64_t prefill_comm_bytes = 0;
  uint64_t decode_comm_bytes = 0;
  double prefix_hit_rate() const {
    return prefix_query_tokens > 0 ? static_cast<double>(prefix_hit_tokens) / static_cast<double>(prefix_query_tokens)
                                   : 0;
  }
};

}  // namespace tessera
