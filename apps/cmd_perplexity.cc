// `tessera perplexity -m MODEL -f TEXT [--ctx N] [--save-logits FILE]
// [--kl-base FILE]`: perplexity over non-overlapping windows of N tokens,
// and the quality cost of a quantized model against a reference run.
//
// Scoring: the text is tokenized without special tokens and cut into
// windows of N tokens (a shorter tail is dropped). Each window is prefilled
// from position 0 in one forward pass; its first token is context only and
// tokens 2..N are scored (N - 1 predictions per window), so the score
// covers every token except each window's first.
//
// Logits file (--save-logits, read back by --kl-base), little-endian:
//   char magic[4] = "TPLG"; uint32 version = 1; uint32 n_vocab; uint32 ctx;
//   uint64 n_positions; int32 targets[n_positions];
//   float32 logits[n_positions][n_vocab]  (raw logits of each scored prediction)
// --kl-base checks that n_vocab, ctx and the target tokens match, then
// reports the mean and 99th-percentile KL(base || model) per position, top-1
// agreement and the perplexity ratio model / base.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli_common.h"
#include "progress_bar.h"

namespace tessera::cli {

namespace {

struct PerplexityOptions {
  EngineFlags engine;
  std::string text_file;
  int ctx = 512;
  int max_windows = 0;
  std::string save_logits;
  std::string kl_base;
};

struct LogitsHeader {
  char magic[4] = {'T', 'P', 'L', 'G'};
  uint32_t version = 1;
  uint32_t n_vocab = 0;
  uint32_t ctx = 0;
  uint64_t n_positions = 0;
};
static_assert(sizeof(LogitsHeader) == 24);

// log-softmax of logits[n] in double: returns log-sum-exp.
double log_sum_exp(const float* logits, int64_t n) {
  double mx = logits[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(logits[i] - mx);
  return mx + std::log(s);
}

int64_t argmax(const float* v, int64_t n) {
  return std::max_element(v, v + n) - v;
}

int perplexity_main(const PerplexityOptions& o) {
  std::ifstream in(o.text_file, std::ios::binary);
  if (!in) return fail(not_found(o.text_file + ": cannot open"));
  const int ctx = o.ctx;
  // The engine scores each window as one request (its prompt's logits,
  // nothing generated) in one step of ctx tokens; the cache holds one window.
  SchedulerFlags sched;
  sched.max_num_seqs = 1;
  sched.max_num_batched_tokens = static_cast<int32_t>(ctx);
  sched.no_prefix_cache = true;
  EngineFlags flags = o.engine;
  flags.kv_cache_memory.clear();
  auto engine = create_engine(flags, sched, ctx + 1);
  if (!engine.ok()) return fail(engine.status());
  const Vocab* vocab = (*engine)->vocab();
  if (vocab == nullptr) return fail(invalid_argument(o.engine.model + ": the model has no tokenizer"));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::vector<int32_t> tokens = vocab->encode(ss.str(), false);
  int64_t n_windows = static_cast<int64_t>(tokens.size()) / ctx;
  if (o.max_windows > 0) n_windows = std::min<int64_t>(n_windows, o.max_windows);
  if (n_windows == 0) {
    return fail(
        invalid_argument(fmt::format("{}: {} tokens, fewer than one window of {}", o.text_file, tokens.size(), ctx)));
  }
  const int64_t nv = (*engine)->model_info().n_vocab;
  const uint64_t n_positions = static_cast<uint64_t>(n_windows) * static_cast<uint64_t>(ctx - 1);

  std::ofstream save;
  if (!o.save_logits.empty()) {
    save.open(o.save_logits, std::ios::binary);
    LogitsHeader h;
    h.n_vocab = static_cast<uint32_t>(nv);
    h.ctx = static_cast<uint32_t>(ctx);
    h.n_positions = n_positions;
    save.write(reinterpret_cast<const char*>(&h), sizeof h);
    for (int64_t w = 0; w < n_windows; ++w) {
      save.write(reinterpret_cast<const char*>(&tokens[static_cast<size_t>(w * ctx + 1)]), (ctx - 1) * 4);
    }
    if (!save) return fail(internal_error(o.save_logits + ": cannot write"));
  }
  std::ifstream base;
  if (!o.kl_base.empty()) {
    base.open(o.kl_base, std::ios::binary);
    std::error_code ec;
    if (!base || std::filesystem::is_directory(o.kl_base, ec)) {
      return fail(not_found(o.kl_base + ": cannot open the --kl-base logits file"));
    }
    LogitsHeader h;
    if (!base.read(reinterpret_cast<char*>(&h), sizeof h) || std::memcmp(h.magic, "TPLG", 4) != 0 || h.version != 1) {
      return fail(data_loss(o.kl_base + ": not a tessera logits file"));
    }
    if (h.n_vocab != nv || h.ctx != static_cast<uint32_t>(ctx) || h.n_positions != n_positions) {
      return fail(invalid_argument(fmt::format("{}: n_vocab {} ctx {} positions {} differ from this run ({} {} {})",
                                               o.kl_base, h.n_vocab, h.ctx, h.n_positions, nv, ctx, n_positions)));
    }
    std::vector<int32_t> targets(n_positions);
    base.read(reinterpret_cast<char*>(targets.data()), static_cast<std::streamsize>(n_positions * 4));
    for (int64_t w = 0; w < n_windows; ++w) {
      if (!std::equal(targets.begin() + w * (ctx - 1), targets.begin() + (w + 1) * (ctx - 1),
                      tokens.begin() + w * ctx + 1)) {
        return fail(invalid_argument(o.kl_base + ": the text tokenizes differently from the base run"));
      }
    }
  }

  ProgressBar progress("perplexity", "windows");  // plain lines when stderr is not a terminal
  double nll = 0, base_nll = 0;
  std::vector<double> kls;
  int64_t top1_same = 0;
  std::vector<float> base_row(static_cast<size_t>(nv));  // [n_vocab]
  for (int64_t w = 0; w < n_windows; ++w) {
    const std::vector<int32_t> window(tokens.begin() + w * ctx, tokens.begin() + (w + 1) * ctx);
    std::vector<float> logits(static_cast<size_t>(ctx) * static_cast<size_t>(nv));  // [ctx, n_vocab]
    GenerationOptions score;
    score.max_tokens = 0;
    score.prompt_logits = true;
    Status error;
    auto id = (*engine)->submit(window, score, [&](const RequestEvent& ev) {
      if (ev.prompt_logits != nullptr) {
        std::copy_n(ev.prompt_logits, static_cast<size_t>(ev.prompt_logits_rows) * static_cast<size_t>(nv),
                    logits.begin() + static_cast<std::ptrdiff_t>(ev.prompt_logits_begin) * nv);
      }
      if (ev.request_finished) error = ev.error;
    });
    if (!id.ok()) return fail(id.status());
    (*engine)->run_until_idle();
    if (!error.ok()) return fail(error);
    logits.resize(static_cast<size_t>(ctx - 1) * static_cast<size_t>(nv));  // the last position predicts nothing scored
    if (save.is_open())
      save.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size() * 4));
    for (int p = 0; p < ctx - 1; ++p) {
      const float* row = &logits[static_cast<size_t>(p * nv)];
      const int32_t target = tokens[static_cast<size_t>(w * ctx + p + 1)];
      const double lse = log_sum_exp(row, nv);
      nll += lse - row[target];
      if (base.is_open()) {
        base.read(reinterpret_cast<char*>(base_row.data()), static_cast<std::streamsize>(nv * 4));
        if (!base) return fail(data_loss(o.kl_base + ": truncated"));
        const double blse = log_sum_exp(base_row.data(), nv);
        base_nll += blse - base_row[static_cast<size_t>(target)];
        double kl = 0;
        for (int64_t i = 0; i < nv; ++i) {
          const double lp = base_row[static_cast<size_t>(i)] - blse;
          kl += std::exp(lp) * (lp - (row[i] - lse));
        }
        kls.push_back(std::max(0.0, kl));
        top1_same += argmax(row, nv) == argmax(base_row.data(), nv);
      }
    }
    progress.update(w + 1, n_windows,
                    fmt::format("ppl so far {:.4f}", std::exp(nll / static_cast<double>((w + 1) * (ctx - 1)))));
  }
  if (save.is_open() && !save) return fail(internal_error(o.save_logits + ": write failed"));
  const double n = static_cast<double>(n_positions);
  const double ppl = std::exp(nll / n);
  fmt::print("perplexity: {:.4f} over {} tokens ({} windows of {}, first token of each window is context only)\n", ppl,
             n_positions, n_windows, ctx);
  if (base.is_open()) {
    std::vector<double> sorted = kls;
    std::sort(sorted.begin(), sorted.end());
    double mean = 0;
    for (double k : kls) mean += k;
    mean /= n;
    const double p99 =
        sorted[std::min(sorted.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(sorted.size())))];
    const double base_ppl = std::exp(base_nll / n);
    fmt::print("base perplexity: {:.4f}, ratio {:.4f}\n", base_ppl, ppl / base_ppl);
    fmt::print("KL(base || model): mean {:.6f}, p99 {:.6f}; top-1 agreement {:.2f}%\n", mean, p99,
               100.0 * static_cast<double>(top1_same) / n);
  }
  return 0;
}

}  // namespace

Runner register_perplexity(CLI::App& app) {
  auto o = std::make_shared<PerplexityOptions>();
  CLI::App* sub = app.add_subcommand("perplexity", "Perplexity over a text file; KL divergence against saved logits");
  add_engine_flags(*sub, o->engine);
  sub->add_option("-f,--file", o->text_file, "Text file")->required();
  sub->add_option("--ctx", o->ctx, "Window size in tokens")->check(CLI::Range(2, 1 << 20));
  sub->add_option("--max-windows", o->max_windows, "Score at most this many windows (0: all)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--save-logits", o->save_logits, "Write every scored position's logits to FILE");
  sub->add_option("--kl-base", o->kl_base, "Compare against logits saved by --save-logits");
  return [o] { return perplexity_main(*o); };
}

}  // namespace tessera::cli
