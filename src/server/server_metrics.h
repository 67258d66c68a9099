// The server's Prometheus metrics (GET /metrics): latency histograms fed from
// each finished request's RequestMetrics, plus counters and gauges read from
// the engine's EngineMetrics at scrape time. Names follow vLLM's, prefixed
// `tessera_` (https://docs.vllm.ai/en/latest/serving/metrics.html).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "server/prometheus.h"
#include "tessera/engine_metrics.h"

namespace tessera::server {

class ServerMetrics {
 public:
  ServerMetrics();
  // Records a finished request (thread-safe).
  void observe(const RequestMetrics& m);
  // Counts one HTTP request answered with `status` >= 400 (thread-safe).
  void count_error(int status);
  // The exposition document; `kv_blocks_total` turns block counts into a usage fraction.
  std::string render(const EngineMetrics& e, int64_t kv_blocks_total) const;

 private:
  Histogram ttft_, tpot_, itl_, e2e_, queue_;
  std::atomic<int64_t> prompt_tokens_{0}, cached_tokens_{0}, requests_{0}, errors_4xx_{0}, errors_5xx_{0};
};

}  // namespace tessera::server
