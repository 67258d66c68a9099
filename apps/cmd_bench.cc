// `tessera bench`: memory read bandwidth, then batch-1 decode and prefill
// speed of a model, with decode as a fraction of the bandwidth roofline
// (bytes read per token / bandwidth) and prefill as achieved FLOP/s.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_report.h"
#include "cli_common.h"
#include "progress_bar.h"
#include "svg_plot.h"
#include "tessera/byte_size.h"
#include "tessera/system.h"

namespace tessera::cli {

namespace {

struct BenchOptions {
  EngineFlags engine;
  std::vector<int> prompt_lengths = {512};  // -p: one measurement each, in order
  bool json = false;                        // --json: the BenchReport as JSON on stdout instead of text
  std::string plot;                         // --plot FILE.svg / FILE.html
  int decode_tokens = 32;
  int repeats = 3;
  bool skip_bandwidth = false;
  SpeculativeOptions spec;  // --spec: the side-by-side speculative comparison instead
  std::vector<int> spec_batches = {1, 8};
  std::string spec_workload = "pattern";  // "pattern" or "loop"
};

// A repetitive workload: a pattern of 16 pseudo-random tokens repeated to
// `n` tokens (different per `variant`), so that greedy output that repeats
// its prompt (or loops, as random-weight models do) is looked up by n-gram.
std::vector<int32_t> repetitive_prompt(const Engine& e, int n, int variant) {
  std::vector<int32_t> pattern(16);
  uint64_t x = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(variant + 1);
  for (int32_t& t : pattern) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    t = static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(e.model_info().n_vocab));
  }
  std::vector<int32_t> prompt(static_cast<size_t>(n));
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = pattern[i % pattern.size()];
  if (e.vocab() != nullptr && e.vocab()->bos_id() >= 0) prompt[0] = e.vocab()->bos_id();
  return prompt;
}

// One measured batch: b requests at once; decode tokens/s counted from the
// moment every request has its first token to the end (wall clock: the
// forward passes, sampling and verification).
struct BatchRun {
  double decode_tps = 0;
  std::vector<std::vector<int32_t>> tokens;
  int64_t proposed = 0, accepted = 0, spec_steps = 0;
  int64_t declined_steps = 0;      // steps the cost-aware switch verified nothing in
  double draft_ms = 0;             // the draft model's proposing time
  double forward_ms_per_step = 0;  // decode steps' forward time (engine metrics)
  double tokens_per_step = 0;      // tokens emitted per decode step, all requests
};

// The prompt of request `i`: the pattern workload, or (loop) the token the
// model itself repeats most, repeated — random-weight models fall into such
// loops, which is the repetitive output n-gram lookup is for.
using PromptFn = std::function<std::vector<int32_t>(int)>;

Result<BatchRun> run_batch(Engine& engine, const PromptFn& prompt_of, int batch, const BenchOptions& o,
                           bool speculative) {
  using Clock = std::chrono::steady_clock;
  GenerationOptions opts;
  opts.sampling.temperature = 0;
  opts.ignore_eos = true;
  opts.max_tokens = o.decode_tokens;
  opts.speculative = speculative;
  BatchRun run;
  run.tokens.resize(static_cast<size_t>(batch));
  int first = 0;
  Clock::time_point t_first;
  Status error;
  const EngineMetrics m0 = engine.metrics();
  for (int i = 0; i < batch; ++i) {
    auto id = engine.submit(prompt_of(i), opts, [&, i](const RequestEvent& ev) {
      if (ev.step.token >= 0 && run.tokens[static_cast<size_t>(i)].empty() && ++first == batch) t_first = Clock::now();
      if (ev.step.token >= 0) run.tokens[static_cast<size_t>(i)].push_back(ev.step.token);
      if (ev.request_finished && !ev.error.ok()) error = ev.error;
    });
    if (!id.ok()) return id.status();
  }
  engine.run_until_idle();
  const auto t_end = Clock::now();
  if (!error.ok()) return error;
  int64_t after_first = 0;
  for (const auto& t : run.tokens) after_first += static_cast<int64_t>(t.size()) - 1;
  run.decode_tps = static_cast<double>(after_first) / std::chrono::duration<double>(t_end - t_first).count();
  const EngineMetrics m1 = engine.metrics();
  run.proposed = m1.spec_proposed_tokens - m0.spec_proposed_tokens;
  run.accepted = m1.spec_accepted_tokens - m0.spec_accepted_tokens;
  run.spec_steps = m1.spec_steps - m0.spec_steps;
  run.declined_steps = m1.spec_declined_steps - m0.spec_declined_steps;
  run.draft_ms = m1.spec_draft_ms - m0.spec_draft_ms;
  const auto steps = static_cast<double>(std::max<int64_t>(1, m1.decode_steps - m0.decode_steps));
  run.forward_ms_per_step = (m1.decode_ms - m0.decode_ms) / steps;
  run.tokens_per_step = static_cast<double>(after_first) / steps;
  return run;
}

// Why a batch verified no proposal, for the bench line ("" when some were).
std::string spec_off_reason(const SpeculativeOptions& spec, int batch, int64_t proposed, int64_t declined) {
  if (proposed > 0) return "";
  if (batch > spec.disable_batch_size) {
    return fmt::format("; none verified: batch {} is above --spec-disable-batch-size {}", batch,
                       spec.disable_batch_size);
  }
  if (declined > 0) return "; none verified: the step times said proposals would not pay (--no-spec-cost-aware)";
  return "; none verified: the proposer found no proposal";
}

// `bench --spec ngram` / `--spec draft --draft-model D`: decode tokens/s without and with speculation, side
// by side in one engine (requests opt out per request), on the repetitive
// workload, at each batch size; greedy, so the tokens must be identical.
int spec_bench_main(const BenchOptions& o) {
  SchedulerFlags sched;
  sched.max_num_seqs = *std::max_element(o.spec_batches.begin(), o.spec_batches.end());
  sched.max_num_batched_tokens = std::max(512, o.prompt_lengths.front() * sched.max_num_seqs);
  sched.no_prefix_cache = true;
  sched.spec = o.spec;
  const int64_t ctx = o.prompt_lengths.front() + o.decode_tokens + 16;
  // Room for every request of the largest batch at once.
  EngineFlags flags = o.engine;
  flags.kv_cache_memory.clear();
  auto engine = create_engine(flags, sched, ctx * sched.max_num_seqs);
  if (!engine.ok()) return fail(engine.status());
  const Engine& e = **engine;
  fmt::print("model: {} ({}, {} layers), KV cache: {}, backend: {}\n", o.engine.model, e.model_info().architecture,
             e.model_info().n_layers, e.kv_cache_info().dtype, e.backend_description());
  const std::string method = o.spec.effective_method();
  const std::string proposer = method == "draft" ? "draft model " + o.spec.draft_model
                                                 : fmt::format("n-gram {}..{}", o.spec.ngram_min, o.spec.ngram_max);
  fmt::print(
      "speculative: {} (k {}, {}{}), workload: {} ({} prompt tokens), {} greedy tokens per request, "
      "best of {}\n",
      method, o.spec.k, proposer, o.spec.adaptive ? ", adaptive" : "",
      o.spec_workload == "loop" ? "the model's own loop" : "a 16-token pattern repeated (one per request)",
      o.prompt_lengths.front(), o.decode_tokens, o.repeats);
  PromptFn prompt_of = [&](int i) { return repetitive_prompt(e, o.prompt_lengths.front(), i); };
  {
    // Warm-up (not measured); for the loop workload it also finds the loop:
    // 32 greedy tokens after the pattern; when their last 16 repeat with a
    // period P <= 8, the loop is those P tokens, else the token most frequent
    // among the 32 (a random-weight model settles into no cycle).
    BenchOptions warm = o;
    warm.decode_tokens = o.spec_workload == "loop" ? 32 : 2;
    auto w = run_batch(**engine, prompt_of, 1, warm, true);
    if (!w.ok()) return fail(w.status());
    if (o.spec_workload == "loop") {
      const std::vector<int32_t>& g = w->tokens[0];
      std::vector<int32_t> loop;
      for (size_t period = 1; period <= 8 && loop.empty() && g.size() >= 16; ++period) {
        bool periodic = true;
        for (size_t i = g.size() - 16; i + period < g.size(); ++i) periodic = periodic && g[i] == g[i + period];
        if (periodic) loop.assign(g.end() - static_cast<std::ptrdiff_t>(period), g.end());
      }
      if (!loop.empty()) {
        fmt::print("loop workload: the greedy output's cycle of {} token{} (from {}) repeated to {} prompt tokens\n",
                   loop.size(), loop.size() == 1 ? "" : "s", loop.front(), o.prompt_lengths.front());
      } else {
        std::map<int32_t, int> count;
        for (int32_t t : g) ++count[t];
        const int32_t top = std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) {
                              return a.second < b.second;
                            })->first;
        fmt::print(
            "loop workload: token {} ({} of the 32 greedy tokens after the pattern) repeated to {} prompt tokens\n",
            top, count[top], o.prompt_lengths.front());
        loop.assign(1, top);
      }
      prompt_of = [&e, loop, n = o.prompt_lengths.front()](int) {
        std::vector<int32_t> p(static_cast<size_t>(n));
        for (size_t i = 0; i < p.size(); ++i) p[i] = loop[i % loop.size()];
        if (e.vocab() != nullptr && e.vocab()->bos_id() >= 0) p[0] = e.vocab()->bos_id();
        return p;
      };
    }
  }
  for (int batch : o.spec_batches) {
    BatchRun best_plain, best_spec;
    for (int r = 0; r < o.repeats; ++r) {
      auto plain = run_batch(**engine, prompt_of, batch, o, false);
      if (!plain.ok()) return fail(plain.status());
      auto spec = run_batch(**engine, prompt_of, batch, o, true);
      if (!spec.ok()) return fail(spec.status());
      if (spec->tokens != plain->tokens) {
        return fail(internal_error("speculative output differs from non-speculative greedy output at batch " +
                                   std::to_string(batch)));
      }
      if (plain->decode_tps > best_plain.decode_tps) best_plain = std::move(*plain);
      if (spec->decode_tps > best_spec.decode_tps) best_spec = std::move(*spec);
    }
    fmt::print(
        "batch {}: decode {:.2f} tokens/s without speculation, {:.2f} with -> {:.2f}x; acceptance rate {:.1f}% "
        "({} of {} proposed), {:.2f} accepted per verifying step; output identical\n"
        "  decode steps: forward {:.2f} ms and {:.2f} tokens per step without, {:.2f} ms and {:.2f} tokens with\n",
        batch, best_plain.decode_tps, best_spec.decode_tps, best_spec.decode_tps / best_plain.decode_tps,
        best_spec.proposed > 0
            ? 100.0 * static_cast<double>(best_spec.accepted) / static_cast<double>(best_spec.proposed)
            : 0.0,
        best_spec.accepted, best_spec.proposed,
        best_spec.spec_steps > 0 ? static_cast<double>(best_spec.accepted) / static_cast<double>(best_spec.spec_steps)
                                 : 0.0,
        best_plain.forward_ms_per_step, best_plain.tokens_per_step, best_spec.forward_ms_per_step,
        best_spec.tokens_per_step);
    fmt::print("  speculation: {} verifying steps, {} declined by the cost-aware switch{}{}\n", best_spec.spec_steps,
               best_spec.declined_steps,
               method == "draft" ? fmt::format(", drafting {:.1f} ms", best_spec.draft_ms) : std::string(),
               spec_off_reason(o.spec, batch, best_spec.proposed, best_spec.declined_steps));
  }
  return 0;
}

// One prompt length, best of o.repeats: batch-1 decode (TPOT from the engine's
// decode-step times) and prefill (the whole prompt in one step). `bandwidth`
// (bytes/s, 0 when not probed) rises to the highest measured around the runs.
Result<BenchLengthResult> measure_length(Engine& engine, int prompt_tokens, const BenchOptions& o, bool probe,
                                         double& bandwidth, std::string& run_details) {
  const ModelInfo& c = engine.model_info();
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_tokens));
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = static_cast<int32_t>((i * 7919 + 3) % static_cast<size_t>(c.n_vocab));
  if (engine.vocab() != nullptr && engine.vocab()->bos_id() >= 0) prompt[0] = engine.vocab()->bos_id();

  BenchLengthResult out;
  out.prompt_tokens = prompt_tokens;
  out.decode_tokens = o.decode_tokens;
  // Average KV bytes read per decode step over the measured positions.
  const double kv_bytes =
      static_cast<double>(engine.kv_cache_info().bytes_per_token) * (prompt_tokens + o.decode_tokens / 2.0);
  out.bytes_per_token = static_cast<double>(c.weight_bytes) + kv_bytes;

  GenerationOptions opts;
  opts.sampling.temperature = 0;
  opts.ignore_eos = true;  // random weights may pick EOS; always decode the full count
  opts.max_tokens = o.decode_tokens;
  double best_prefill_ms = 1e30;
  double best_tpot_ms = 1e30;
  // This VM's bandwidth drifts with its neighbours from minute to minute, so
  // each run is also judged against the bandwidth measured right before and
  // right after it (the higher of the two).
  std::vector<double> run_fraction;
  double before = bandwidth;
  ProgressBar progress(fmt::format("bench -p {}", prompt_tokens), "runs");
  progress.update(0, o.repeats);
  for (int r = 0; r < o.repeats; ++r) {
    // The engine's forward-pass times: prefill steps, then batch-1 decode steps.
    const EngineMetrics m0 = engine.metrics();
    TESSERA_ASSIGN_OR_RETURN(auto res, engine.generate(prompt, opts));
    (void)res;
    const EngineMetrics m1 = engine.metrics();
    if (m1.prefill_ms - m0.prefill_ms < best_prefill_ms) {
      best_prefill_ms = m1.prefill_ms - m0.prefill_ms;
      out.prefill_comm_ms = m1.prefill_comm_ms - m0.prefill_comm_ms;
      out.prefill_comm_bytes = m1.prefill_comm_bytes - m0.prefill_comm_bytes;
    }
    const int64_t decode_steps = m1.decode_tokens - m0.decode_tokens;
    if (decode_steps <= 0) {
      progress.update(r + 1, o.repeats);
      continue;
    }
    const double tpot_ms = (m1.decode_ms - m0.decode_ms) / static_cast<double>(decode_steps);
    if (tpot_ms < best_tpot_ms) {
      best_tpot_ms = tpot_ms;
      out.decode_comm_ms_per_step = (m1.decode_comm_ms - m0.decode_comm_ms) / static_cast<double>(decode_steps);
      out.decode_comm_bytes_per_step =
          (m1.decode_comm_bytes - m0.decode_comm_bytes) / static_cast<uint64_t>(decode_steps);
    }
    if (probe) {
      const double after = engine.measure_read_bandwidth();
      const double run_bw = std::max(before, after);
      run_fraction.push_back(out.bytes_per_token * 1000.0 / tpot_ms / run_bw);
      run_details += fmt::format("{}{:.1f}% ({:.2f} tok/s at {:.2f} GB/s)", run_details.empty() ? "" : ", ",
                                 100.0 * run_fraction.back(), 1000.0 / tpot_ms, run_bw / 1e9);
      bandwidth = std::max(bandwidth, after);
      before = after;
    }
    progress.update(r + 1, o.repeats, fmt::format("{:.2f} decode tokens/s", 1000.0 / tpot_ms));
  }
  out.tpot_ms = best_tpot_ms;
  out.decode_tokens_per_s = 1000.0 / best_tpot_ms;
  if (probe && !run_fraction.empty()) {
    std::vector<double> sorted = run_fraction;
    std::sort(sorted.begin(), sorted.end());
    const size_t mid = sorted.size() / 2;
    out.median_fraction_of_bandwidth = sorted.size() % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2.0;
    out.decode_roofline_tokens_per_s = bandwidth / out.bytes_per_token;
  }
  // 2 FLOPs per weight per token, plus attention (QK and PV) over the causal prompt.
  const double matrix_params =
      static_cast<double>(c.n_layers) * (2.0 * c.n_embd * c.n_heads * c.head_dim +
                                         2.0 * c.n_embd * c.n_kv_heads * c.head_dim + 3.0 * c.n_embd * c.n_ff) +
      static_cast<double>(c.n_vocab) * c.n_embd / prompt_tokens;
  const double attn_flops =
      2.0 * c.n_layers * c.n_heads * c.head_dim * static_cast<double>(prompt_tokens) * prompt_tokens;
  const double prefill_flops = 2.0 * matrix_params * prompt_tokens + attn_flops;
  out.prefill_tokens_per_s = prompt_tokens * 1000.0 / best_prefill_ms;
  out.prefill_gflops = prefill_flops / best_prefill_ms / 1e6;
  return out;
}

void print_length(const BenchLengthResult& l, const std::string& run_details, double bandwidth) {
  fmt::print("decode (batch 1, context ~{}): {:.2f} tokens/s, TPOT {:.2f} ms, {} read per token\n", l.prompt_tokens,
             l.decode_tokens_per_s, l.tpot_ms, format_byte_size(static_cast<uint64_t>(l.bytes_per_token)));
  if (l.decode_roofline_tokens_per_s) {
    fmt::print("decode vs bandwidth measured around each run: {} (median {:.1f}%)\n", run_details,
               100.0 * *l.median_fraction_of_bandwidth);
    fmt::print(
        "decode roofline at the highest bandwidth seen ({:.2f} GB/s): {:.2f} tokens/s -> {:.1f}% of the "
        "memory-bandwidth limit ({:.2f} GB/s effective)\n",
        bandwidth / 1e9, *l.decode_roofline_tokens_per_s,
        100.0 * l.decode_tokens_per_s / *l.decode_roofline_tokens_per_s,
        l.decode_tokens_per_s * l.bytes_per_token / 1e9);
  }
  fmt::print("prefill ({} token{}): {:.1f} tokens/s, {:.1f} GFLOP/s\n", l.prompt_tokens,
             l.prompt_tokens == 1 ? "" : "s", l.prefill_tokens_per_s, l.prefill_gflops);
  if (l.decode_comm_bytes_per_step > 0 || l.prefill_comm_bytes > 0) {
    const double prefill_ms = l.prompt_tokens * 1000.0 / l.prefill_tokens_per_s;
    fmt::print(
        "communication (rank 0): decode {:.3f} ms and {} per step ({:.1f}% of TPOT); prefill {:.2f} ms and {} "
        "({:.1f}% of the prefill)\n",
        l.decode_comm_ms_per_step, format_byte_size(l.decode_comm_bytes_per_step),
        100.0 * l.decode_comm_ms_per_step / l.tpot_ms, l.prefill_comm_ms, format_byte_size(l.prefill_comm_bytes),
        100.0 * l.prefill_comm_ms / prefill_ms);
  }
}

int bench_main(const BenchOptions& o) {
  if (o.spec.enabled()) return spec_bench_main(o);
  const int threads = resolve_threads(o.engine);
  const int max_prompt = *std::max_element(o.prompt_lengths.begin(), o.prompt_lengths.end());
  // One request at a time through the engine; the whole prompt in one step
  // (prefill) and no prefix cache, so every repeat computes the prompt again.
  SchedulerFlags sched;
  sched.max_num_seqs = 1;
  sched.max_num_batched_tokens = std::max(512, max_prompt);
  sched.no_prefix_cache = true;
  EngineFlags flags = o.engine;
  flags.kv_cache_memory.clear();  // the cache holds the one request
  auto gen = create_engine(flags, sched, max_prompt + o.decode_tokens + 16);
  if (!gen.ok()) return fail(gen.status());
  Engine& engine = **gen;
  const ModelInfo& c = engine.model_info();
  BenchReport report;
  report.model = o.engine.model;
  report.architecture = c.architecture;
  report.n_layers = c.n_layers;
  report.threads = threads;
  report.backend = engine.backend_description();
  report.weight_bytes = c.weight_bytes;
  report.kv_bytes_per_token = engine.kv_cache_info().bytes_per_token;
  report.kv_cache_dtype = engine.kv_cache_info().dtype;
  report.repeats = o.repeats;
  report.tensor_parallel_size = o.engine.parallel.tensor_parallel_size;
  report.pipeline_parallel_size = o.engine.parallel.pipeline_parallel_size;
  if (!o.json) {
    fmt::print("model: {} ({}, {} layers, embedding {}), KV cache: {}, backend: {}\n", o.engine.model, c.architecture,
               c.n_layers, c.n_embd, engine.kv_cache_info().dtype, report.backend);
  }
  // The backend measures the bandwidth of its own memory, on its own threads.
  const bool probe = !o.skip_bandwidth;
  double bandwidth = 0;  // the highest read bandwidth measured, bytes/s
  if (probe) {
    bandwidth = engine.measure_read_bandwidth();
    if (!o.json) {
      fmt::print("memory read bandwidth: {:.2f} GB/s ({} {}, best of 1, 2 and 4 streams per thread)\n", bandwidth / 1e9,
                 threads, threads == 1 ? "thread" : "threads");
    }
  }
  {
    // Warm-up (not measured): a short prompt and two tokens touch every
    // weight once, so the first measured run does not pay for page faults.
    GenerationOptions warm_opts;
    warm_opts.sampling.temperature = 0;
    warm_opts.ignore_eos = true;
    warm_opts.max_tokens = 2;
    const std::vector<int32_t> warm(static_cast<size_t>(std::min(max_prompt, 8)), 1);
    auto res = engine.generate(warm, warm_opts);
    if (!res.ok()) return fail(res.status());
  }
  for (int p : o.prompt_lengths) {
    std::string run_details;
    auto l = measure_length(engine, p, o, probe, bandwidth, run_details);
    if (!l.ok()) return fail(l.status());
    if (!o.json) print_length(*l, run_details, bandwidth);
    report.lengths.push_back(std::move(*l));
  }
  if (probe) report.bandwidth_bytes_per_s = bandwidth;
  if (!o.plot.empty()) {
    std::string error;
    if (!write_plot(o.plot, bench_plot_title(report), bench_charts(report), &error, 3)) {
      return fail(invalid_argument(error));
    }
    fmt::print(stderr, "bench: wrote {}\n", o.plot);
  }
  if (o.json) {
    fmt::print("{}\n", bench_report_json(report).dump(2));
  } else {
    fmt::print("resident memory (this process{}): {}{}\n", o.engine.parallel.world_size() > 1 ? ", rank 0" : "",
               format_byte_size(resident_memory_bytes()),
               probe ? " (with the bandwidth probe's buffer; --skip-bandwidth leaves it out)" : "");
  }
  return 0;
}

}  // namespace

Runner register_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand("bench", "Measure memory bandwidth, decode and prefill speed of a model");
  sub->footer(
      "Load-testing a running server: `tessera bench serve --url URL ...` (the same as `tessera bench-serve`).");
  add_engine_flags(*sub, o->engine);
  // bench sizes its own cache for one request of -p + -n tokens.
  sub->get_option("--ctx-size")->description("Ignored (accepted for older command lines): the KV cache holds -p + -n");
  sub->get_option("--kv-cache-memory")->description("Ignored: the KV cache holds -p + -n");
  sub->add_option("-p,--prompt-tokens", o->prompt_lengths,
                  "Prompt tokens for prefill, also the context decode runs at; a list (64,256,1024) measures each")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  sub->add_option("-n,--decode-tokens", o->decode_tokens, "Tokens to decode")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  sub->add_option("-r,--repeats", o->repeats, "Measured runs (best and median reported, after one warm-up)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  sub->add_flag("--skip-bandwidth", o->skip_bandwidth, "Do not measure memory bandwidth");
  sub->add_flag("--json", o->json, "Print the results as one JSON object on stdout instead of text");
  sub->add_option("--plot", o->plot,
                  "Write FILE.svg or FILE.html: decode tokens/s against the bandwidth roofline, prefill tokens/s "
                  "and GFLOP/s, over the -p lengths");
  add_spec_flags(*sub, o->spec);
  sub->add_option("--spec-batch", o->spec_batches,
                  "With --spec: batch sizes compared with and without speculation (default 1 8)")
      ->check(CLI::Range(1, 256));
  sub->add_option("--spec-workload", o->spec_workload,
                  "With --spec: pattern (a repeated 16-token pattern) or loop (the token the model repeats, repeated)")
      ->check(CLI::IsMember({"pattern", "loop"}));
  return [o] {
    if (int rc = check_spec_flags(o->spec); rc != 0) return rc;
    if (o->spec.enabled() && (o->prompt_lengths.size() != 1 || o->json || !o->plot.empty())) {
      fmt::print(stderr, "tessera: error: --spec takes one -p length and no --json or --plot (see --help)\n");
      return kExitUsage;
    }
    if (int rc = check_plot_flag(o->plot); rc != 0) return rc;
    return bench_main(*o);
  };
}

}  // namespace tessera::cli
