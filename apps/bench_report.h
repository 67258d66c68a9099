// What `tessera bench` measured (decode and prefill at each prompt length),
// as the JSON `bench --json` prints and the charts `bench --plot` draws:
// decode tokens/s against the memory-bandwidth roofline (tokens/s limit =
// read bandwidth / bytes read per token: the weights plus the KV cache at
// that context; Williams et al., "Roofline", CACM 2009), and prefill
// tokens/s with the FLOP/s it achieved. The bench measures no FLOP/s peak,
// so prefill has no roofline of its own.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "svg_plot.h"

namespace tessera::cli {

// One prompt length's best-of-repeats figures.
struct BenchLengthResult {
  int prompt_tokens = 0;
  int decode_tokens = 0;
  double decode_tokens_per_s = 0;  // batch 1, 1000 / best TPOT
  double tpot_ms = 0;
  double bytes_per_token = 0;  // weights + average KV bytes read per decode step
  // With a bandwidth measurement: the roofline at the highest bandwidth seen so far, and decode's fraction of it.
  std::optional<double> decode_roofline_tokens_per_s;
  std::optional<double> median_fraction_of_bandwidth;  // per run, against the bandwidth measured around it
  double prefill_tokens_per_s = 0;
  double prefill_gflops = 0;  // 2 FLOPs per weight per token plus causal attention, over the best prefill time
  // Parallel runs (mpirun): rank 0's time inside communicator calls and the bytes it sent, in the best runs.
  double decode_comm_ms_per_step = 0;
  uint64_t decode_comm_bytes_per_step = 0;
  double prefill_comm_ms = 0;
  uint64_t prefill_comm_bytes = 0;
};

struct BenchReport {
  std::string model;  // the -m path
  std::string architecture;
  int32_t n_layers = 0;
  int threads = 0;
  std::string backend;
  uint64_t weight_bytes = 0;
  uint64_t kv_bytes_per_token = 0;
  std::string kv_cache_dtype;                   // the cache's element type (f16, int8, ...)
  std::optional<double> bandwidth_bytes_per_s;  // the highest read bandwidth measured; none with --skip-bandwidth
  int repeats = 0;
  int tensor_parallel_size = 1;  // mpirun runs: the layout (kv_bytes_per_token is then rank 0's)
  int pipeline_parallel_size = 1;
  std::vector<BenchLengthResult> lengths;  // in -p order
};

// {"model", "architecture", "n_layers", "threads", "backend", "weight_bytes",
//  "kv_bytes_per_token", "kv_cache_dtype", "tensor_parallel_size",
//  "pipeline_parallel_size", "bandwidth_gb_per_s" (null without), "repeats",
//  "runs": [{"prompt_tokens", "decode_tokens", "decode_tokens_per_s", "tpot_ms",
//  "bytes_per_token", "decode_roofline_tokens_per_s" (null without),
//  "decode_fraction_of_roofline" (null without), "median_fraction_of_bandwidth"
//  (null without), "prefill_tokens_per_s", "prefill_gflops",
//  "decode_comm_ms_per_step", "decode_comm_bytes_per_step", "prefill_comm_ms",
//  "prefill_comm_bytes"}]}.
nlohmann::ordered_json bench_report_json(const BenchReport& r);

// "tessera bench: MODEL (ARCH, N layers; BACKEND, read bandwidth B GB/s; best of R)".
std::string bench_plot_title(const BenchReport& r);

// Three charts over prompt tokens (the context decode runs at): decode
// tokens/s with its roofline series, prefill tokens/s, prefill GFLOP/s.
std::vector<PlotChart> bench_charts(const BenchReport& r);

}  // namespace tessera::cli
