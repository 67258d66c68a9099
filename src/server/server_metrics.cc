#include "server/server_metrics.h"

namespace tessera::server {

namespace {
std::vector<double> latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 30.0, 60.0};
}
}  // namespace

ServerMetrics::ServerMetrics()
    : ttft_(latency_buckets()),
      tpot_(latency_buckets()),
      itl_(latency_buckets()),
      e2e_(latency_buckets()),
      queue_(latency_buckets()) {}

void ServerMetrics::observe(const RequestMetrics& m) {
  ++requests_;
  prompt_tokens_ += m.prompt_tokens;
  cached_tokens_ += m.cached_tokens;
  queue_.observe(m.queue_ms / 1000.0);
  e2e_.observe(m.e2e_ms / 1000.0);
  if (m.generated_tokens > 0) ttft_.observe(m.ttft_ms / 1000.0);
  if (!m.itl_ms.empty()) tpot_.observe(m.tpot_ms() / 1000.0);
  for (double v : m.itl_ms) itl_.observe(v / 1000.0);
}

void ServerMetrics::count_error(int status) {
  ++(status >= 500 ? errors_5xx_ : errors_4xx_);
}

std::string ServerMetrics::render(const EngineMetrics& e, int64_t kv_blocks_total) const {
  PrometheusWriter w;
  w.gauge("tessera_num_requests_running", "Requests whose sequences are running in the engine.", e.running);
  w.gauge("tessera_num_requests_waiting", "Requests waiting to be scheduled.", e.waiting);
  w.gauge("tessera_kv_cache_usage_perc", "Fraction of KV cache blocks in use (1 = full).",
          kv_blocks_total > 0 ? static_cast<double>(e.kv_blocks_used) / static_cast<double>(kv_blocks_total) : 0.0);
  w.counter("tessera_prompt_tokens_total", "Prompt tokens of finished requests.",
            static_cast<double>(prompt_tokens_.load()));
  w.counter("tessera_cached_prompt_tokens_total", "Prompt tokens of finished requests reused from the prefix cache.",
            static_cast<double>(cached_tokens_.load()));
  w.counter("tessera_prompt_tokens_computed_total", "Prompt tokens run through the model (prefill).",
            static_cast<double>(e.prompt_tokens_computed));
  w.counter("tessera_generation_tokens_total", "Generated tokens.", static_cast<double>(e.generated_tokens));
  w.counter("tessera_prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
            static_cast<double>(e.prefix_query_tokens));
  w.counter("tessera_prefix_cache_hits_total", "Prompt tokens found in the prefix cache.",
            static_cast<double>(e.prefix_hit_tokens));
  w.counter("tessera_num_preemptions_total", "Sequences preempted (recomputed later).",
            static_cast<double>(e.preemptions));
  // Speculative decoding (vLLM's spec_decode names).
  w.counter("tessera_spec_decode_num_draft_tokens_total", "Proposed tokens verified by the target model.",
            static_cast<double>(e.spec_proposed_tokens));
  w.counter("tessera_spec_decode_num_accepted_tokens_total", "Proposed tokens accepted.",
            static_cast<double>(e.spec_accepted_tokens));
  w.counter("tessera_spec_decode_num_drafts_total", "Sequence-steps that verified proposed tokens.",
            static_cast<double>(e.spec_steps));
  w.counter("tessera_spec_decode_declined_steps_total",
            "Steps whose proposals the cost-aware switch did not verify (they would not have paid).",
            static_cast<double>(e.spec_declined_steps));
  w.counter("tessera_spec_decode_draft_seconds_total", "Time the draft model spent proposing.",
            e.spec_draft_ms / 1000.0);
  w.gauge("tessera_spec_decode_acceptance_rate", "Accepted / proposed tokens since start (0 without speculation).",
          e.spec_acceptance_rate());
  w.gauge("tessera_spec_decode_mean_accepted_length", "Accepted tokens per verifying sequence-step since start.",
          e.spec_mean_accepted_length());
  w.counter("tessera_request_success_total",
            "Choices of successfully finished requests by finish reason (a request with n choices adds n).",
            {{{{"finished_reason", "stop"}}, static_cast<double>(e.finished_stop)},
             {{{"finished_reason", "length"}}, static_cast<double>(e.finished_length)}});
  w.counter("tessera_request_aborted_total", "Requests cancelled before they finished (client abort or disconnect).",
            static_cast<double>(e.finished_cancelled));
  w.counter("tessera_request_failed_total", "Requests the engine ended with an error.",
            static_cast<double>(e.finished_error));
  w.counter("tessera_http_errors_total", "HTTP responses with an error status.",
            {{{{"class", "4xx"}}, static_cast<double>(errors_4xx_.load())},
             {{{"class", "5xx"}}, static_cast<double>(errors_5xx_.load())}});
  w.histogram("tessera_time_to_first_token_seconds", "Time from arrival to the first generated token.", ttft_);
  w.histogram("tessera_time_per_output_token_seconds", "Mean time per output token after the first, per request.",
              tpot_);
  w.histogram("tessera_inter_token_latency_seconds", "Time between consecutive generated tokens.", itl_);
  w.histogram("tessera_e2e_request_latency_seconds", "Time from arrival to the end of the request.", e2e_);
  w.histogram("tessera_request_queue_time_seconds", "Time from arrival to first being scheduled.", queue_);
  return w.text();
}

}  // namespace tessera::server
