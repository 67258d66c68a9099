#include "bench_report.h"

#include <fmt/core.h>

namespace tessera::cli {

using Json = nlohmann::ordered_json;

namespace {

Json optional_number(const std::optional<double>& v) {
  return v ? Json(*v) : Json(nullptr);
}

}  // namespace

Json bench_report_json(const BenchReport& r) {
  Json runs = Json::array();
  for (const BenchLengthResult& l : r.lengths) {
    runs.push_back({{"prompt_tokens", l.prompt_tokens},
                    {"decode_tokens", l.decode_tokens},
                    {"decode_tokens_per_s", l.decode_tokens_per_s},
                    {"tpot_ms", l.tpot_ms},
                    {"bytes_per_token", l.bytes_per_token},
                    {"decode_roofline_tokens_per_s", optional_number(l.decode_roofline_tokens_per_s)},
                    {"decode_fraction_of_roofline", l.decode_roofline_tokens_per_s
                                                        ? Json(l.decode_tokens_per_s / *l.decode_roofline_tokens_per_s)
                                                        : Json(nullptr)},
                    {"median_fraction_of_bandwidth", optional_number(l.median_fraction_of_bandwidth)},
                    {"prefill_tokens_per_s", l.prefill_tokens_per_s},
                    {"prefill_gflops", l.prefill_gflops},
                    {"decode_comm_ms_per_step", l.decode_comm_ms_per_step},
                    {"decode_comm_bytes_per_step", l.decode_comm_bytes_per_step},
                    {"prefill_comm_ms", l.prefill_comm_ms},
                    {"prefill_comm_bytes", l.prefill_comm_bytes}});
  }
  return {{"model", r.model},
          {"architecture", r.architecture},
          {"n_layers", r.n_layers},
          {"threads", r.threads},
          {"backend", r.backend},
          {"weight_bytes", r.weight_bytes},
          {"kv_bytes_per_token", r.kv_bytes_per_token},
          {"kv_cache_dtype", r.kv_cache_dtype},
          {"tensor_parallel_size", r.tensor_parallel_size},
          {"pipeline_parallel_size", r.pipeline_parallel_size},
          {"bandwidth_gb_per_s", r.bandwidth_bytes_per_s ? Json(*r.bandwidth_bytes_per_s / 1e9) : Json(nullptr)},
          {"repeats", r.repeats},
          {"runs", std::move(runs)}};
}

std::string bench_plot_title(const BenchReport& r) {
  std::string bw = r.bandwidth_bytes_per_s ? fmt::format(", read bandwidth {:.2f} GB/s", *r.bandwidth_bytes_per_s / 1e9)
                                           : std::string(", bandwidth not measured");
  return fmt::format("tessera bench: {} ({}, {} layers; {}{}; best of {})", r.model, r.architecture, r.n_layers,
                     r.backend, bw, r.repeats);
}

std::vector<PlotChart> bench_charts(const BenchReport& r) {
  PlotSeries decode{"measured decode (batch 1)", {}, {}, true};
  PlotSeries roofline{"roofline: bandwidth / bytes read per token (labels: % reached)", {}, {}, true};
  PlotSeries prefill{"measured prefill", {}, {}, true};
  PlotSeries gflops{"achieved prefill GFLOP/s", {}, {}, true};
  for (const BenchLengthResult& l : r.lengths) {
    const double x = l.prompt_tokens;
    decode.points.emplace_back(x, l.decode_tokens_per_s);
    if (l.decode_roofline_tokens_per_s) {
      roofline.points.emplace_back(x, *l.decode_roofline_tokens_per_s);
      roofline.labels.push_back(
          fmt::format("{:.0f}%", 100.0 * l.decode_tokens_per_s / *l.decode_roofline_tokens_per_s));
    }
    prefill.points.emplace_back(x, l.prefill_tokens_per_s);
    gflops.points.emplace_back(x, l.prefill_gflops);
  }
  PlotChart d{"Decode vs the memory-bandwidth roofline", "context (prompt tokens)", "decode tokens/s", {decode}};
  if (!roofline.points.empty()) {
    d.series.push_back(std::move(roofline));
  } else {
    d.title += " (not measured: --skip-bandwidth)";
  }
  PlotChart p{"Prefill throughput", "prompt tokens", "prefill tokens/s", {prefill}};
  PlotChart g{"Prefill compute (no FLOP/s peak measured)", "prompt tokens", "GFLOP/s", {gflops}};
  return {std::move(d), std::move(p), std::move(g)};
}

}  // namespace tessera::cli
